"""kazoo's connection loop ending on its own (kazoo issue #254: an unexpected error in it, such
as "xids do not match" after a server restart, ends the loop and kazoo never connects again):
ZkClient starts it again with a new session, and calls in between are retried, against the
real ZooKeeper. CI47 saw a processor exit with "ConnectionClosedError: Connection has been
closed" after a 5 s outage under a session timeout of 20 s."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from kazoo.protocol.states import KeeperState

from samza_nb.errors import MetadataStoreError
from samza_nb.metadata.zk_client import ZkClient

pytestmark = pytest.mark.services


def _break_the_loop_once(client: ZkClient) -> list[str]:
    """The next response the connection reads raises inside kazoo's loop, as kazoo #254's did."""
    connection = client.kazoo._connection
    read_socket = connection._read_socket
    raised: list[str] = []

    def broken(read_timeout: float) -> Any:
        del connection._read_socket  # once: the instance attribute goes, the method is back
        msg = "xids do not match, expected 3 received 2"
        raised.append(msg)
        raise RuntimeError(msg)

    connection._read_socket = broken
    assert connection._read_socket is not read_socket
    return raised


# kazoo's loop thread ends with the injected error: that is the fault under test.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_connection_loop_that_ended_on_its_own_is_started_again_with_a_new_session(
    zk_connect: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = ZkClient(zk_connect, session_timeout=6, call_timeout=3)
    try:
        client.create("/loop", b"before")
        first_session = client.session_id
        raised = _break_the_loop_once(client)
        with caplog.at_level(logging.WARNING):
            # The get's answer breaks the loop; the call is tried again on the new session.
            data, _stat = client.get("/loop") or (None, None)
        assert raised == ["xids do not match, expected 3 received 2"]
        assert data == b"before"
        assert client.session_id is not None and client.session_id != first_session
        assert any("connection loop ended on its own" in r.getMessage() for r in caplog.records), caplog.text
        client.set("/loop", b"after")
        assert (client.get("/loop") or (None,))[0] == b"after"
    finally:
        client.close()


def test_a_closed_client_is_not_started_again(zk_connect: str, caplog: pytest.LogCaptureFixture) -> None:
    client = ZkClient(zk_connect, session_timeout=6, call_timeout=1, max_tries=2)
    with caplog.at_level(logging.WARNING):
        client.close()
        time.sleep(0.5)
    assert client.kazoo.client_state == KeeperState.CLOSED
    assert not any("ended on its own" in r.getMessage() for r in caplog.records), caplog.text
    with pytest.raises(MetadataStoreError, match="ConnectionClosedError"):
        client.get("/")
