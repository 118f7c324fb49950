"""transports/stomp.py (upstream 11-163): two stomp.py connections per agent (STOMP 1.1,
heart-beat 60000,60000, login from STOMP_USER / STOMP_PASSWORD), `/queue/request/<agent>` and
`/queue/response/<agent>` (prefixes hard-coded) subscribed with ack:auto, bodies yaml.dump'ed
and read back with yaml.load(body, yaml.Loader). SENDs carry no header of their own."""

from __future__ import annotations

import logging
import os
from typing import Any, Optional

import stomp
import stomp.utils
import yaml

from wiseagents.wise_agent_messaging import WiseAgentMessage, WiseAgentTransport


class WiseAgentRequestQueueListener(stomp.ConnectionListener):
    def __init__(self, transport: WiseAgentTransport) -> None:
        self.transport = transport

    def on_error(self, frame: Any) -> None:
        self.transport.error_receiver(frame)

    def on_message(self, frame: stomp.utils.Frame) -> None:
        self.transport.request_receiver(yaml.load(frame.body, yaml.Loader))


class WiseAgentResponseQueueListener(stomp.ConnectionListener):
    def __init__(self, transport: WiseAgentTransport) -> None:
        self.transport = transport

    def on_error(self, frame: Any) -> None:
        self.transport.error_receiver(frame)

    def on_message(self, frame: stomp.utils.Frame) -> None:
        self.transport.response_receiver(yaml.load(frame.body, yaml.Loader))


class StompWiseAgentTransport(WiseAgentTransport):
    yaml_tag = "!wiseagents.transports.StompWiseAgentTransport"
    request_conn: Optional[stomp.Connection] = None
    response_conn: Optional[stomp.Connection] = None

    def __init__(self, host: str, port: int, agent_name: str) -> None:
        self._host = host
        self._port = port
        self._agent_name = agent_name

    def _connection(
        self, listener_name: str, listener: stomp.ConnectionListener, queue: str, sub_id: int
    ) -> stomp.Connection:
        conn = stomp.Connection(host_and_ports=[(self.host, self.port)], heartbeats=(60000, 60000))
        conn.set_listener(listener_name, listener)
        conn.connect(os.getenv("STOMP_USER"), os.getenv("STOMP_PASSWORD"), wait=True)
        conn.subscribe(destination=queue, id=sub_id, ack="auto")
        return conn

    def start(self) -> None:
        if (
            self.request_conn is not None
            and self.request_conn.is_connected()
            and self.response_conn is not None
            and self.response_conn.is_connected()
        ):
            return
        self.request_conn = self._connection(
            "WiseAgentRequestTopicListener", WiseAgentRequestQueueListener(self), self.request_queue, id(self)
        )
        self.response_conn = self._connection(
            "WiseAgentResponseQueueListener", WiseAgentResponseQueueListener(self), self.response_queue, id(self) + 1
        )

    def send_request(self, message: WiseAgentMessage, dest_agent_name: str) -> None:
        if self.request_conn is None or self.response_conn is None:
            self.start()
        for conn in (self.request_conn, self.response_conn):
            if not conn.is_connected():
                conn.connect(os.getenv("STOMP_USER"), os.getenv("STOMP_PASSWORD"), wait=True)
        logging.getLogger(__name__).debug(f"Sending request {message} to /queue/request/{dest_agent_name}")
        self.request_conn.send(body=yaml.dump(message), destination="/queue/request/" + dest_agent_name)

    def send_response(self, message: WiseAgentMessage, dest_agent_name: str) -> None:
        if self.request_conn is None or self.response_conn is None:
            self.start()
        self.response_conn.send(body=yaml.dump(message), destination="/queue/response/" + dest_agent_name)

    def stop(self) -> None:
        if self.request_conn is not None and self.request_conn.is_connected():
            self.request_conn.unsubscribe(destination=self.request_queue, id=id(self))
            self.request_conn.disconnect()
        if self.response_conn is not None and self.response_conn.is_connected():
            self.response_conn.unsubscribe(destination=self.response_queue, id=id(self) + 1)
            self.response_conn.disconnect()

    host = property(lambda self: self._host)
    port = property(lambda self: self._port)
    agent_name = property(lambda self: self._agent_name)
    request_queue = property(lambda self: "/queue/request/" + self.agent_name)
    response_queue = property(lambda self: "/queue/response/" + self.agent_name)
