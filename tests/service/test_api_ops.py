"""Test-only operations for the server under test, injected with ``create_app(runner=...)``.

They exist only here: production servers run :func:`service.pipeline.run` and nothing a
request sends can reach these. A module named ``test-sleep`` sleeps for as many seconds as
its text says; ``test-crash`` kills its own worker process with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import socket
from contextlib import contextmanager
from typing import Any, Iterator

from service import pipeline
from service.pipeline import ModuleRequest, Operation, Success


def slow_or_crashing_run(request: Any, progress: Any = None) -> Any:
    if isinstance(request, ModuleRequest) and request.name == "test-sleep":
        time.sleep(float(request.hlo))
        return Success(Operation.CHECK, {"slept": float(request.hlo)})
    if isinstance(request, ModuleRequest) and request.name == "test-crash":
        os.kill(os.getpid(), signal.SIGKILL)
    return pipeline.run(request, progress)


@contextmanager
def running_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields the base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        if thread.is_alive():  # a request still open: stop without waiting for it
            server.force_exit = True
            thread.join(timeout=20)
        sock.close()
        # A server thread left running would be torn down mid-write at interpreter exit.
        assert not thread.is_alive(), "the server thread did not stop"
