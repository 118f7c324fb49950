"""The shared link against the real broker: a message is acknowledged only once its handler
returned, and a lost connection is reconnected with the subscriptions restored."""

from __future__ import annotations

import asyncio
import dataclasses
import socket

import pytest
import stomp

from sab_stomp import AsyncLink, MessageFrame
from sab_testing import Broker, Names


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def send(broker: Broker, destination: str, *bodies: str) -> None:
    conn = stomp.Connection([("127.0.0.1", broker.port)], vhost="/")
    conn.connect(broker.login, broker.passcode, wait=True)
    for body in bodies:
        conn.send(destination, body, headers={"persistent": "true"})
    conn.disconnect(receipt="bye")


def test_a_message_whose_handler_never_finished_is_redelivered_and_an_accepted_one_is_not(broker):
    names = Names(broker)
    queue = names.dest("link.ack")
    send(broker, queue, "first")

    async def scenario():
        got_first: asyncio.Queue = asyncio.Queue()
        stuck = AsyncLink(broker.link(prefetch=1), name="stuck")
        await stuck.start()

        async def never_accepts(frame):
            await got_first.put(frame.body)
            await asyncio.Event().wait()

        await stuck.subscribe(queue, never_accepts)
        first = await got_first.get()
        await stuck.stop()  # the framework never took it: no ACK

        seen: asyncio.Queue = asyncio.Queue()
        second = AsyncLink(broker.link(), name="second")
        await second.start()

        async def accepts(frame):
            await seen.put((frame.body, frame.headers.get("redelivered")))

        await second.subscribe(queue, accepts)
        again = await seen.get()
        await asyncio.to_thread(send, broker, queue, "marker")
        marker = await seen.get()
        await second.stop()

        third_seen: asyncio.Queue = asyncio.Queue()
        third = AsyncLink(broker.link(), name="third")
        await third.start()
        await third.subscribe(queue, lambda f: third_seen.put(f.body))
        await asyncio.to_thread(send, broker, queue, "after")
        after = await third_seen.get()
        await third.stop()
        return first, again, marker, after

    first, again, marker, after = run(scenario())
    assert first == b"first"
    assert again == (b"first", "true"), "the unaccepted message came back, marked redelivered"
    assert marker[0] == b"marker"
    assert after == b"after", "the accepted messages were acknowledged: nothing came back before 'after'"


def test_a_lost_connection_is_reconnected_and_the_subscription_restored(broker):
    names = Names(broker)
    queue = names.dest("link.reconnect")

    async def scenario():
        seen: asyncio.Queue = asyncio.Queue()
        link = AsyncLink(broker.link(), name="reconnect")
        await link.start()
        await link.subscribe(queue, lambda f: seen.put(f.body))
        conn = link.link._conn
        assert conn is not None
        conn.transport.socket.shutdown(socket.SHUT_RDWR)  # the network drops it
        await asyncio.to_thread(send, broker, queue, "after the drop")
        body = await seen.get()
        reconnects = link.link.reconnects
        await link.send(queue, "sent on the new connection")
        body2 = await seen.get()
        await link.stop()
        return body, reconnects, body2

    body, reconnects, body2 = run(scenario())
    assert body == b"after the drop"
    assert reconnects == 1
    assert body2 == b"sent on the new connection"


def test_heart_beats_are_negotiated_and_the_brokers_keep_arriving_while_idle(broker):
    async def scenario():
        link = AsyncLink(broker.link(heartbeats=(1000, 1000)), name="beats")
        await link.start()
        conn = link.link._conn
        assert conn is not None
        first = conn.received_heartbeat
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while conn.received_heartbeat == first and loop.time() < deadline:
            await asyncio.sleep(0.1)  # polling a clock the receiver thread moves, bounded
        later = conn.received_heartbeat
        negotiated = conn.heartbeats
        reconnects = link.link.reconnects
        await link.stop()
        return first, later, negotiated, reconnects

    first, later, negotiated, reconnects = run(scenario())
    assert negotiated == (1000, 1000)
    assert later > first, "a heart-beat (or frame) from the broker arrived while idle"
    assert reconnects == 0


def test_a_message_the_framework_refuses_goes_to_the_dead_letter_queue_with_the_reason(broker):
    names = Names(broker)
    inbox, dead = names.dest("link.refuse"), names.dest("link.dead")
    send(broker, inbox, "poison", "good")

    async def scenario():
        handled: asyncio.Queue = asyncio.Queue()
        link = AsyncLink(broker.link(dead_letter=dead), name="refuse")
        await link.start()

        async def framework(frame):
            if frame.body == b"poison":
                raise ValueError("poison refused")
            await handled.put(frame.body)

        await link.subscribe(inbox, framework)
        good = await handled.get()
        letters: asyncio.Queue = asyncio.Queue()
        await link.subscribe(dead, lambda f: letters.put((f.body, f.headers)))
        letter = await letters.get()
        await asyncio.to_thread(send, broker, inbox, "after")
        after = await handled.get()
        counted = link.dead_lettered
        await link.stop()
        return good, letter, after, counted

    good, (body, headers), after, counted = run(scenario())
    assert good == b"good"
    assert body == b"poison"
    assert headers["bridge-error"] == "ValueError: poison refused"
    assert (headers["bridge-error-kind"], headers["bridge-source"]) == ("adapter", inbox)
    assert after == b"after", "the refused message was settled, not redelivered"
    assert counted == 1


def test_a_handler_is_given_the_links_own_frame_which_names_the_connection_it_came_on(broker):
    names = Names(broker)
    queue = names.dest("link.frame")
    send(broker, queue, "hello")

    async def scenario():
        frames: asyncio.Queue = asyncio.Queue()
        link = AsyncLink(broker.link(), name="frame")
        await link.start()
        await link.subscribe(queue, frames.put)
        frame = await frames.get()
        generation = link.link._generation
        await link.stop()
        return frame, generation

    frame, generation = run(scenario())
    assert isinstance(frame, MessageFrame), type(frame)
    assert (frame.body, frame.headers["destination"]) == (b"hello", queue)
    assert frame.generation == generation == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.generation = 2  # type: ignore[misc]  # nothing marks a frame after the fact


def test_an_unsubscribe_right_after_a_handler_returned_waits_for_its_ack(broker):
    """An ask's reply inbox is unsubscribed as soon as its answer is read: the answer's ACK must
    go first, since an ACK for a subscription already gone is an ERROR on Artemis and RabbitMQ,
    and the broker then drops the connection."""
    names = Names(broker)

    async def scenario():
        link = AsyncLink(broker.link(), name="unsubscribe")
        await link.start()
        for i in range(30):
            queue = names.dest(f"link.unsubscribe{i}")
            seen: asyncio.Queue = asyncio.Queue()
            sub = await link.subscribe(queue, seen.put)
            await link.send(queue, f"answer {i}")
            await seen.get()
            await link.unsubscribe(sub)
        reconnects = link.link.reconnects
        await link.stop()
        return reconnects

    assert run(scenario()) == 0, "the broker never dropped the connection over a late ACK"


def test_a_handler_that_unsubscribes_its_own_subscription_does_not_wait_for_itself(broker, caplog):
    names = Names(broker)
    queue = names.dest("link.own")

    async def scenario():
        link = AsyncLink(broker.link(), name="own")
        await link.start()
        subs: list[str] = []
        done: asyncio.Queue = asyncio.Queue()

        async def leaves(frame):
            await link.unsubscribe(subs[0])
            await done.put(frame.body)

        subs.append(await link.subscribe(queue, leaves))
        await link.send(queue, "the last one")
        body = await done.get()
        reconnects = link.link.reconnects
        await link.stop()
        return body, reconnects

    body, _ = run(scenario())
    assert body == b"the last one"
    assert "still being handled" not in caplog.text, "it did not wait out the timeout for its own message"


def test_an_unsubscribe_cancelled_while_it_waits_still_unsubscribes(broker):
    names = Names(broker)
    queue = names.dest("link.cancelled")

    async def scenario():
        link = AsyncLink(broker.link(), name="cancelled")
        await link.start()
        arrived, never = asyncio.Event(), asyncio.Event()

        async def stuck(frame):
            arrived.set()
            await never.wait()

        sub = await link.subscribe(queue, stuck)
        await link.send(queue, "held")
        await arrived.wait()
        with pytest.raises(TimeoutError):  # a caller's own bound runs out while the ACK is awaited
            await asyncio.wait_for(link.unsubscribe(sub), 0.2)
        still = sub in link.link._subs
        await link.stop()
        return still

    assert run(scenario()) is False, "the subscription is gone, not restored at the next reconnect"
