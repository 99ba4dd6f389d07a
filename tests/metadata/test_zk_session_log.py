"""What a processor's log says when its ZooKeeper session expires, against the real ZooKeeper:
one line naming the server and what follows, not kazoo's bare "Session has expired" (which
reached a processor's stderr alone, CI62)."""

from __future__ import annotations

import logging
import time

import pytest
from kazoo.client import KazooClient

from samza_nb.metadata import zk_session_log
from samza_nb.metadata.zk_client import ZkClient

pytestmark = pytest.mark.services


def _expire(connect: str, client: ZkClient) -> None:
    """ZooKeeper's way to expire a session: a second client joins it with its id and password
    (the server drops the first connection), then closes it."""
    session_id, password = client.kazoo.client_id
    other = KazooClient(hosts=connect, client_id=(session_id, password))
    other.start(timeout=10)
    other.stop()
    other.close()


def test_an_expired_session_is_one_line_naming_zookeeper_and_a_new_session_follows(
    zk_connect: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same line from another test of this process within a minute would be quieted.
    monkeypatch.setattr(zk_session_log._repeats_quieted, "_last", {})
    client = ZkClient(zk_connect, session_timeout=6, call_timeout=3)
    try:
        client.create("/expiring", b"x", ephemeral=True)
        first_session = client.session_id
        with caplog.at_level(logging.INFO):
            _expire(zk_connect, client)
            deadline = time.monotonic() + 20
            while client.session_id in (None, first_session) and time.monotonic() < deadline:
                time.sleep(0.1)
        assert client.session_id not in (None, first_session), "no new session after the expiry"
        lines = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
        assert "Session has expired" not in lines, lines
        assert (
            f"ZooKeeper {client.description}: the session expired (the connection was away longer "
            "than the session timeout, 6 s); connecting with a new session"
        ) in lines, lines
        assert client.exists("/expiring") is None  # the old session's ephemeral node went with it
    finally:
        client.close()
