"""A ZkClient its owner closed because of a failure: calls in flight or made afterwards fail with
an error that names that failure, not with kazoo's bare "Connection has been closed".

CI50 saw a processor report "... activeJobModelVersion failed: ConnectionClosedError Connection
has been closed" after ZooKeeper stayed away past the session timeout: the coordinator closed
the client (so that calls stuck on the dead link end) while the epoch's checkpoint write was
waiting, and that write's error reached the user before the coordinator's."""

from __future__ import annotations

import threading
import time

import pytest

from samza_nb.errors import CoordinationError, MetadataStoreError
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.testing import OwnZooKeeper

pytestmark = pytest.mark.services

_CAUSE = "processor 'p-1' was disconnected from ZooKeeper for more than the session timeout (4 s)"


def test_a_call_after_a_close_because_of_a_failure_names_the_failure(zk_connect: str) -> None:
    client = ZkClient(zk_connect, session_timeout=6, call_timeout=1, max_tries=2)
    cause = CoordinationError(_CAUSE)
    client.close(because=cause)
    with pytest.raises(MetadataStoreError) as raised:
        client.get("/")
    assert str(raised.value) == f"ZooKeeper {client.description}: get / failed: the client was closed: {_CAUSE}"
    assert raised.value.__cause__ is cause


def test_a_call_waiting_on_a_dead_link_when_the_client_is_closed_names_the_failure(
    own_zookeeper: OwnZooKeeper,
) -> None:
    client = ZkClient(own_zookeeper.connect, session_timeout=4, call_timeout=2, max_tries=5)
    try:
        client.ensure("/waiting", b"x")
        own_zookeeper.stop()
        errors: list[BaseException] = []
        started = threading.Event()

        def read() -> None:
            started.set()
            try:
                client.get("/waiting")
            except BaseException as error:  # noqa: BLE001 - the test reads it
                errors.append(error)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        started.wait(5)
        time.sleep(0.5)  # the get is waiting for an answer the dead server never sends
        assert reader.is_alive()
        client.close(because=CoordinationError(_CAUSE))
        reader.join(10)
        assert not reader.is_alive(), "the waiting call did not end within its bound"
        (error,) = errors
        assert isinstance(error, MetadataStoreError), repr(error)
        assert str(error).startswith(f"ZooKeeper {client.description}: get /waiting failed"), error
        assert str(error).endswith(f"failed: the client was closed: {_CAUSE}"), error
    finally:
        client.close()
