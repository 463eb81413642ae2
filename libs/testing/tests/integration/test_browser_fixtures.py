"""chromium_executable / browser_page against Debian's Chromium via Playwright."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body><h1 id='t'>stockade</h1><script>document.title='ready-'+(1+1)</script></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


async def test_browser_page_renders_and_runs_javascript(browser_page) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        await browser_page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        assert await browser_page.text_content("#t") == "stockade"
        assert await browser_page.title() == "ready-2"
    finally:
        server.shutdown()


def test_chromium_executable_exists(chromium_executable) -> None:
    assert chromium_executable.exists()
