"""AzureJobLease (the JobLease contract on a blob lease), fenced commits, and AzureLock."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from samza_nb.coordination.azure import AzureJobLease, AzureLock
from samza_nb.errors import CoordinationError, JobLeaseError
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import AzureAccount

from ..lease_contract import JobLeaseContract

pytestmark = pytest.mark.services

HOLDER = Path(__file__).with_name("_lease_holder.py")


@pytest.fixture
def store(azure_connection_string: str, azure_container: str) -> Iterator[AzureBlobMetadataStore]:
    with AzureBlobMetadataStore(AzureAccount(azure_connection_string), azure_container) as made:
        yield made


class TestAzureJobLease(JobLeaseContract):
    release_seconds = 15.0 + 10.0  # Azurite's shortest lease, and slack for a loaded machine

    @pytest.fixture
    def new_lease(self, store: AzureBlobMetadataStore) -> Callable[[], AzureJobLease]:
        return lambda: AzureJobLease(
            AzureBlobMetadataStore(store.account, store.container), duration=15
        )

    @pytest.fixture
    def holder_argv(
        self, azure_connection_string: str, azure_container: str, monkeypatch: pytest.MonkeyPatch
    ) -> list[str]:
        monkeypatch.setenv("SAMZA_NB_AZURE_CONNECTION_STRING", azure_connection_string)
        return [sys.executable, str(HOLDER), azure_container]


def test_fenced_commits_stop_once_another_incarnation_took_over(
    store: AzureBlobMetadataStore,
) -> None:
    first = AzureJobLease(store, duration=15, holder="first")
    first.acquire()
    store.put_all({"offsets": b"1"}, fence=first.fence)
    from azure.storage.blob import BlobLeaseClient

    # The lease is lost (broken, as after an expiry) and a newer incarnation takes it.
    BlobLeaseClient(first.blob).break_lease(lease_break_period=0)
    other = AzureBlobMetadataStore(store.account, store.container)
    second = AzureJobLease(other, duration=15, holder="second")
    assert second.acquire() == first.generation + 1
    with pytest.raises(JobLeaseError):
        store.put_all({"offsets": b"2"}, fence=first.fence)
    with pytest.raises(JobLeaseError):
        first.check()
    other.put_all({"offsets": b"3"}, fence=second.fence)
    assert store.get("offsets") == b"3"
    first.release()
    second.release()


def test_lock_is_mutually_exclusive_and_times_out(store: AzureBlobMetadataStore) -> None:
    container = store._client
    inside: list[int] = []
    entered: list[int] = []
    overlaps: list[int] = []
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            with AzureLock(container, "streams", timeout=30, lease_duration=15):
                if inside:
                    overlaps.append(n)
                inside.append(n)
                entered.append(n)
                time.sleep(0.2)
                inside.remove(n)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert sorted(entered) == [0, 1, 2]
    assert not overlaps
    held = AzureLock(container, "streams", lease_duration=15)
    held.acquire()
    began = time.monotonic()
    with pytest.raises(CoordinationError, match="not acquired within"):
        AzureLock(container, "streams", lease_duration=15).acquire(timeout=0.5)
    assert time.monotonic() - began < 5
    held.release()
    held.release()  # idempotent


def test_a_lock_whose_renewals_fail_retries_then_says_it_was_lost(
    store: AzureBlobMetadataStore, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from azure.core.exceptions import ServiceRequestError
    from azure.storage.blob import BlobLeaseClient

    real_renew = BlobLeaseClient.renew
    failures = {"flaky-2": 2, "flaky-all": 10**6}  # renewals the network drops, per lock
    names: dict[str, str] = {}  # lease id -> lock

    def renew(lease: BlobLeaseClient, **options: object) -> None:
        name = names.get(lease.id, "")
        if failures.get(name, 0) > 0:  # the named fault point: a renewal's request
            failures[name] -= 1
            reset = "connection reset by peer"
            raise ServiceRequestError(reset)
        real_renew(lease, **options)

    monkeypatch.setattr(BlobLeaseClient, "renew", renew)
    locks = [AzureLock(store._client, name, lease_duration=15, renew_every=0.5) for name in failures]
    for lock in locks:
        lock.acquire()
        names[lock._lease.id] = lock.lock_id
    time.sleep(16.5)  # past the 15 s lease of the lock whose renewals all fail
    recovered, lost = locks
    assert failures["flaky-2"] == 0 and "renewing its lease failed, retrying" in caplog.text
    recovered.release()  # renewed again in time: released without an error
    assert "lost (its lease was not renewed for 15 s" in caplog.text
    with pytest.raises(CoordinationError, match="held past its lease"):
        lost.release()


class _AcquiredInBetween:
    """A processor blob whose first ``acquire_lease`` finds that another process of the same id
    acquired right after this one broke the lease (the race of two restarts of one id)."""

    def __init__(self, blob: object, others: int) -> None:
        self._blob = blob
        self._others = others
        self.others_leases: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._blob, name)

    def acquire_lease(self, **kwargs: object) -> object:
        if len(self.others_leases) < self._others:
            other = self._blob.acquire_lease(lease_duration=-1)  # type: ignore[attr-defined]
            self.others_leases.append(str(other.id))
        return self._blob.acquire_lease(**kwargs)  # type: ignore[attr-defined]


def test_the_later_starter_takes_the_fencing_lease_when_another_acquires_between_break_and_acquire(
    store: AzureBlobMetadataStore,
) -> None:
    from samza_nb.coordination.azure.fencing import (
        _TAKE_ATTEMPTS,
        fence_lease_renewed,
        take_fence_lease,
    )

    blob = store._client.get_blob_client("processors/p-race")
    raced = _AcquiredInBetween(blob, others=2)
    lease = take_fence_lease(raced, store, "p-race", "race test")
    assert len(raced.others_leases) == 2
    assert lease not in raced.others_leases
    assert store.fence_token("p-race") == lease
    assert fence_lease_renewed(blob, lease)
    assert not fence_lease_renewed(blob, raced.others_leases[-1])
    # Another process acquiring after every break: a clear error naming the lease, no hang.
    always = _AcquiredInBetween(blob, others=_TAKE_ATTEMPTS)
    with pytest.raises(CoordinationError, match="race test: cannot take the fencing lease processors/p-race"):
        take_fence_lease(always, store, "p-race", "race test")
