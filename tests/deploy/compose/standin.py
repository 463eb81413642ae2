"""Answer only a health check: ``standin.py tcp PORT`` accepts and closes connections (MongoDB's port);
``standin.py http PORT`` answers ``GET /ping`` with ``Ok.`` (ClickHouse's) and 503 to everything else.
Test-only (tests/deploy/compose): no MongoDB or ClickHouse server can be built from this machine's packages."""

import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Ping(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        ok = self.path.split("?")[0] == "/ping"
        body = b"Ok.\n" if ok else b"stand-in: only /ping is served\n"
        self.send_response(200 if ok else 503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET  # noqa: N815


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    if kind == "http":
        ThreadingHTTPServer(("0.0.0.0", port), Ping).serve_forever()  # noqa: S104
    with socket.create_server(("0.0.0.0", port)) as server:  # noqa: S104
        while True:
            connection, _ = server.accept()
            connection.close()


if __name__ == "__main__":
    main()
