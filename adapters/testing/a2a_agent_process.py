"""An a2a-sdk agent in a process of its own, for the test that kills the far end of an
outbound A2A call while the call is under way (a2a_testing.AgentSubprocess runs it).

``python a2a_agent_process.py NAME`` serves a ``BlockingExecutor`` that is never released at
``http://127.0.0.1:<port>/a2a/NAME``; it writes ``url <url>`` once the server listens, then
``received <text>`` when a message reaches the executor (the call is then under way, and stays
so until the process is killed)."""

from __future__ import annotations

import sys

from a2a.helpers import get_message_text

from a2a_testing import A2AAgentServer, BlockingExecutor


def main() -> None:
    executor = BlockingExecutor(hold_secs=3600)
    server = A2AAgentServer(sys.argv[1], executor)
    print(f"url {server.url}", flush=True)  # the socket listens before A2AAgentServer returns
    while True:
        message = executor.received.get()
        print(f"received {get_message_text(message)}", flush=True)


if __name__ == "__main__":
    main()
