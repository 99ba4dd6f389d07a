"""ZkJobLease (the JobLease contract on ZooKeeper) and the distributed lock."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest
from kazoo.exceptions import NoNodeError

from samza_nb.coordination.zk import ZkDistributedLock, ZkJobLease, ZkKeyBuilder
from samza_nb.errors import CoordinationError, JobLeaseError
from samza_nb.metadata.zk_client import ZkClient

from ..lease_contract import JobLeaseContract, NewLease
from .conftest import SESSION_MS, expire_session, wait_until

pytestmark = pytest.mark.services


class TestZkJobLease(JobLeaseContract):
    """The contract every lease backend meets. Each lease has a ZooKeeper session of its own,
    as each incarnation of a job would; a SIGKILLed holder's lease goes with its session."""

    release_seconds = SESSION_MS / 1000 + 10.0

    @pytest.fixture
    def new_lease(self, zk_connect: str, keys: ZkKeyBuilder) -> Iterator[NewLease]:
        clients: list[ZkClient] = []

        def make() -> ZkJobLease:
            client = ZkClient(zk_connect, session_timeout=SESSION_MS / 1000, error=CoordinationError)
            clients.append(client)
            return ZkJobLease(client, keys)

        yield make
        for client in clients:
            client.close()

    @pytest.fixture
    def holder_argv(self, zk_connect: str, keys: ZkKeyBuilder) -> list[str]:
        script = textwrap.dedent(
            f"""
            import time
            from samza_nb.coordination.zk import ZkJobLease, ZkKeyBuilder
            from samza_nb.errors import CoordinationError
            from samza_nb.metadata.zk_client import ZkClient
            client = ZkClient({zk_connect!r}, session_timeout={SESSION_MS / 1000}, error=CoordinationError)
            lease = ZkJobLease(client, ZkKeyBuilder({keys.root!r}))
            print("HELD", lease.acquire(), flush=True)
            time.sleep(120)
            """
        )
        return [sys.executable, "-c", script]


@pytest.fixture
def other(zk_connect: str):
    client = ZkClient(zk_connect, session_timeout=SESSION_MS / 1000, error=CoordinationError)
    yield client
    client.close()


def test_second_acquire_fails_naming_the_holder(zk: ZkClient, other: ZkClient, keys: ZkKeyBuilder) -> None:
    first = ZkJobLease(zk, keys, holder="processor p1 on host-a")
    assert first.generation == 0
    assert first.acquire() == 1
    assert first.holder() == "processor p1 on host-a"
    first.check()
    second = ZkJobLease(other, keys, holder="processor p2 on host-b")
    with pytest.raises(JobLeaseError, match="held by processor p1 on host-a") as caught:
        second.acquire()
    assert caught.value.holder == "processor p1 on host-a"


def test_wait_acquires_after_release_with_a_greater_generation(
    zk: ZkClient, other: ZkClient, keys: ZkKeyBuilder
) -> None:
    first = ZkJobLease(zk, keys, holder="first")
    second = ZkJobLease(other, keys, holder="second")
    assert first.acquire() == 1
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(second.acquire(wait=True, timeout=10)))
    waiter.start()
    time.sleep(0.5)
    assert not got
    first.release()
    waiter.join(10)
    assert got == [2]
    assert second.holder() == "second"
    with pytest.raises(JobLeaseError, match="fenced|lost"):
        first.check()  # a newer generation exists
    first.release()  # idempotent, and does not free the other's lease
    assert second.holder() == "second"
    second.release()
    assert second.holder() is None
    assert ZkJobLease(zk, keys).acquire() == 3


def test_wait_times_out_naming_the_holder(zk: ZkClient, other: ZkClient, keys: ZkKeyBuilder) -> None:
    ZkJobLease(zk, keys, holder="stuck").acquire()
    started = time.monotonic()
    with pytest.raises(JobLeaseError, match="stuck"):
        ZkJobLease(other, keys).acquire(wait=True, timeout=1.0)
    assert time.monotonic() - started < 5


def test_check_fails_after_session_loss_and_fence_blocks_commits(
    zk: ZkClient, other: ZkClient, keys: ZkKeyBuilder
) -> None:
    lease = ZkJobLease(zk, keys, holder="frozen")
    lease.acquire()
    zk.ensure(keys.root + "/offsets", b"0")

    def commit(value: bytes) -> None:
        def build(tx: object) -> None:
            lease.fence(tx)
            tx.set_data(keys.root + "/offsets", value)  # type: ignore[attr-defined]

        zk.commit("commit offsets", build)

    commit(b"1")
    expire_session(zk.kazoo)
    wait_until(lambda: other.exists(keys.lease) is None, 10, "the lease node to vanish")
    with pytest.raises(JobLeaseError, match="lost the job lease"):
        lease.check()
    with pytest.raises(NoNodeError):
        commit(b"2")  # the frozen incarnation cannot commit any more
    assert other.get(keys.root + "/offsets")[0] == b"1"  # type: ignore[index]
    newer = ZkJobLease(other, keys, holder="newer")
    assert newer.acquire() == 2


def test_distributed_lock_is_exclusive(zk: ZkClient, other: ZkClient, keys: ZkKeyBuilder) -> None:
    first = ZkDistributedLock(zk, keys, "run-id", "p1", timeout=5)
    second = ZkDistributedLock(other, keys, "run-id", "p2", timeout=5)
    with first:
        with pytest.raises(CoordinationError, match="not acquired within 0.5 s"):
            second.acquire(timeout=0.5)
    with second:
        pass


def test_run_id_is_shared_by_a_deployment_and_new_for_the_next(
    zk: ZkClient, other: ZkClient, keys: ZkKeyBuilder
) -> None:
    from samza_nb.coordination.zk import ZkRunIdGenerator
    from samza_nb.coordination.zk.run_id import UNSAID, member_run_ids
    from samza_nb.metadata import InMemoryMetadataStore, NamespacedMetadataStore

    store = InMemoryMetadataStore()
    first = ZkRunIdGenerator(zk, keys, store, "p1")
    second = ZkRunIdGenerator(other, keys, store, "p2")
    run_id = first.run_id()
    assert second.run_id() == run_id == first.run_id()
    assert NamespacedMetadataStore(store, "set-config").get("app.run.id") == run_id.encode()
    assert member_run_ids(zk, keys) == {run_id}  # what a drain names
    # A member of an older samza_nb holds its processor id: it says no run id.
    older = zk.create(first.membership + "/", b"p9", ephemeral=True, sequence=True)
    assert member_run_ids(zk, keys) == {run_id, UNSAID}
    zk.delete(older)
    first.close()
    second.close()
    assert ZkRunIdGenerator(zk, keys, store, "p1").run_id() != run_id
