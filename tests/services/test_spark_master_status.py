"""Reading the standalone master's status: a master still starting is not yet healthy."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from samza_nb.services.spark import alive_workers


class _StatusPage(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


@pytest.fixture
def status_page() -> Iterator[tuple[int, type[_StatusPage]]]:
    handler = type("Page", (_StatusPage,), {})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], handler
    server.shutdown()
    server.server_close()


def test_a_master_answering_an_empty_page_has_no_alive_workers(status_page) -> None:  # type: ignore[no-untyped-def]
    port, page = status_page
    page.body = b""
    assert alive_workers(port) == 0
    page.body = b"<html>starting</html>"
    assert alive_workers(port) == 0


def test_alive_workers_are_counted_once_the_master_is_alive(status_page) -> None:  # type: ignore[no-untyped-def]
    port, page = status_page
    workers = [{"state": "ALIVE"}, {"state": "ALIVE"}, {"state": "DEAD"}]
    page.body = json.dumps({"status": "STANDBY", "workers": workers}).encode()
    assert alive_workers(port) == 0
    page.body = json.dumps({"status": "ALIVE", "workers": workers}).encode()
    assert alive_workers(port) == 2
