"""moto's DynamoDB server, answering one request at a time.

DynamoDB applies each conditional write atomically: of two concurrent conditional PutItems on
one item, exactly one succeeds. moto's own server (`moto_server`) runs threaded and checks a
condition, then writes, without a lock, so two concurrent run claims can both succeed there.
The store's run claim relies on that atomicity, so the local stack serializes requests: still a
threaded server (a slow client does not block the listener), but the application runs under
one lock.

    python moto_serial.py HOST PORT
"""

import signal
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serial(environ, start_response):
        with lock:
            # Consume the body inside the lock: the write happens while it is produced.
            return list(app(environ, start_response))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run_simple(host, port, serial, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
