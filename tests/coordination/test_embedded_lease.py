"""EmbeddedJobLease against the JobLease contract, and fenced commits on the embedded store."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from samza_nb.coordination.embedded_lease import GENERATION_KEY, EmbeddedJobLease
from samza_nb.errors import JobLeaseError, MetadataStoreError
from samza_nb.metadata import (
    EmbeddedMetadataStore,
    InMemoryMetadataStore,
    MetadataStore,
    NamespacedMetadataStore,
)

from .lease_contract import JobLeaseContract, NewLease


@pytest.fixture
def job_home(tmp_path: Path) -> Path:
    return tmp_path / "jobs" / "app-1"


@pytest.fixture
def store(job_home: Path) -> Iterator[EmbeddedMetadataStore]:
    with EmbeddedMetadataStore(job_home / "metadata.sqlite3") as opened:
        yield opened


class TestEmbeddedJobLease(JobLeaseContract):
    release_seconds = 5.0

    @pytest.fixture
    def new_lease(self, job_home: Path, store: EmbeddedMetadataStore) -> NewLease:
        return lambda: EmbeddedJobLease(job_home, store)

    @pytest.fixture
    def holder_argv(self, job_home: Path) -> list[str]:
        script = textwrap.dedent(
            f"""
            import time
            from samza_nb.coordination.embedded_lease import EmbeddedJobLease
            from samza_nb.metadata import EmbeddedMetadataStore
            home = {str(job_home)!r}
            lease = EmbeddedJobLease(home, EmbeddedMetadataStore(home + "/metadata.sqlite3"))
            print("HELD", lease.acquire(), flush=True)
            time.sleep(120)
            """
        )
        return [sys.executable, "-c", script]


def test_the_lock_file_says_who_holds_it_and_is_private(job_home: Path, store: MetadataStore) -> None:
    with EmbeddedJobLease(job_home, store, label="run 42") as lease:
        holder = lease.holder()
        assert holder is not None and f"pid {os.getpid()}" in holder and "run 42" in holder
        assert "generation 1" in holder
        assert stat.S_IMODE(os.stat(job_home).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(lease.lock_file).st_mode) == 0o600
    assert EmbeddedJobLease(job_home, store).holder() is None


def test_a_forked_child_does_not_keep_the_lease(job_home: Path, store: MetadataStore) -> None:
    lease = EmbeddedJobLease(job_home, store)
    lease.acquire()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: holds a copy of nothing, then lingers
        os.close(read)
        os.write(write, b"x")
        os.close(write)
        import time

        time.sleep(3)
        os._exit(0)
    try:
        os.close(write)
        assert os.read(read, 1) == b"x"
        os.close(read)
        lease.release()
        # The child still runs, yet the lease is free: it closed its inherited descriptor.
        assert EmbeddedJobLease(job_home, store).acquire() == 2
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


# -- fenced commits ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["embedded", "in-memory", "namespaced"])
def test_a_commit_from_a_stale_generation_fails_and_writes_nothing(
    kind: str, job_home: Path, store: EmbeddedMetadataStore
) -> None:
    target: MetadataStore = {
        "embedded": store,
        "in-memory": InMemoryMetadataStore(),
        "namespaced": NamespacedMetadataStore(store, "checkpoints"),
    }[kind]
    base = store if kind != "in-memory" else target
    old = EmbeddedJobLease(job_home, base)
    old.acquire()
    target.put_all({"offset": b"10"}, fence=old.fence)
    old.release()  # say it was frozen: a newer run takes over
    new = EmbeddedJobLease(job_home, base)
    new.acquire()
    with pytest.raises(JobLeaseError, match="generation 1 of the job lease but generation 2"):
        target.put_all({"offset": b"99", "other": b"1"}, fence=old.fence)
    assert target.get("offset") == b"10" and target.get("other") is None
    with pytest.raises(JobLeaseError):
        target.put_all({}, fence=old.fence)
    target.put_all({"offset": b"20"}, fence=new.fence)
    assert target.get("offset") == b"20"
    new.release()


def test_a_fence_without_a_lease_yet_is_generation_zero(store: EmbeddedMetadataStore) -> None:
    store.put_all({"a": b"1"}, fence=(GENERATION_KEY, 0))
    with pytest.raises(JobLeaseError):
        store.put_all({"a": b"2"}, fence=(GENERATION_KEY, 1))
    assert store.get("a") == b"1"


def test_a_store_that_cannot_fence_refuses(job_home: Path) -> None:
    class Plain(MetadataStore):
        def __init__(self) -> None:
            self.data: dict[str, bytes] = {}

        def get(self, key: str) -> bytes | None:
            return self.data.get(key)

        def put(self, key: str, value: bytes) -> None:
            self.data[key] = value

        def delete(self, key: str) -> None:
            self.data.pop(key, None)

        def all(self) -> dict[str, bytes]:
            return dict(self.data)

    plain = Plain()
    with pytest.raises(MetadataStoreError, match="cannot check a job lease fence"):
        plain.put_all({"a": b"1"}, fence=(GENERATION_KEY, 0))
    assert plain.data == {}


def test_a_deleted_job_home_fences_the_run_that_held_it(tmp_path: Path) -> None:
    home = tmp_path / "app-1"
    with EmbeddedMetadataStore(home / "metadata.sqlite3") as store:
        lease = EmbeddedJobLease(home, store)
        lease.acquire()
        lease.check()
        shutil.rmtree(home)
        with pytest.raises(JobLeaseError, match="was deleted or replaced"):
            lease.check()
        lease.release()


def test_a_second_run_in_the_same_process_says_so(job_home: Path, store: MetadataStore) -> None:
    with EmbeddedJobLease(job_home, store):
        with pytest.raises(JobLeaseError, match="that is this process: a run started earlier") as failure:
            EmbeddedJobLease(job_home, store).acquire()
        # A handle lost in a notebook: the message says how to stop the run anyway.
        assert f"samza-nb drain --job-home {job_home} --wait" in str(failure.value)
