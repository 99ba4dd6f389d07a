"""ZooKeeper from the pyspark wheel: sessions, ephemeral sequential nodes and a lock recipe."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.services


def test_ephemeral_sequential_node_and_lock(zk_connect: str) -> None:
    from kazoo.client import KazooClient

    first = KazooClient(hosts=zk_connect, timeout=10.0)
    second = KazooClient(hosts=zk_connect, timeout=10.0)
    first.start(timeout=15.0)
    second.start(timeout=15.0)
    try:
        first.ensure_path("/processors")
        path = first.create("/processors/processor-", b"p1", ephemeral=True, sequence=True)
        assert path.startswith("/processors/processor-")
        assert path.rsplit("-", 1)[1].isdigit() and len(path.rsplit("-", 1)[1]) == 10
        data, stat = second.get(path)
        assert data == b"p1" and stat.ephemeralOwner == first.client_id[0]

        held = first.Lock("/locks/job-model", identifier="processor-1")
        contender = second.Lock("/locks/job-model", identifier="processor-2")
        assert held.acquire(timeout=10)
        assert contender.acquire(blocking=False) is False
        assert held.contenders() == ["processor-1"]
        held.release()
        assert contender.acquire(timeout=10)
        contender.release()

        # The ephemeral node goes with its session.
        first.stop()
        assert second.exists(path) is None
    finally:
        for client in (first, second):
            client.stop()
            client.close()


def test_chroot_is_private(zk_connect: str) -> None:
    from kazoo.client import KazooClient

    hosts, _, chroot = zk_connect.partition("/")
    assert chroot.startswith("samza-nb-test-")
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=15.0)
    try:
        assert client.exists(f"/{chroot}") is not None
    finally:
        client.stop()
        client.close()
