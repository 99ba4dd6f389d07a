"""The JobLease contract, one test class every backend reuses (embedded, ZooKeeper, Azure:
test_embedded_lease.py, zk/test_lease_lock.py, azure/test_lease_lock.py).

A backend's test module subclasses :class:`JobLeaseContract` and provides two fixtures:

* ``new_lease``: a callable returning a fresh, unacquired lease object for one job (each call is
  another would-be incarnation of the *same* job, sharing its generation);
* ``holder_argv``: a command that takes that job's lease in a child process, prints
  ``HELD <generation>`` on a line of its own, then sleeps until killed.

``release_seconds`` bounds how long the backend takes to free the lease of a SIGKILLed holder
(an OS file lock: at once; a ZooKeeper ephemeral node: the session timeout; an Azure blob
lease: its duration).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from samza_nb.coordination.lease import JobLease
from samza_nb.errors import JobLeaseError

NewLease = Callable[[], JobLease]


class JobLeaseContract:
    """Mix-in test class: subclass it and provide ``new_lease`` and ``holder_argv``."""

    release_seconds: float = 5.0

    @pytest.fixture
    def leases(self, new_lease: NewLease) -> Iterator[list[JobLease]]:
        """Leases made by the tests, released afterwards whatever happened."""
        made: list[JobLease] = []
        yield made
        for lease in made:
            lease.release()

    @pytest.fixture
    def lease(self, new_lease: NewLease, leases: list[JobLease]) -> Callable[[], JobLease]:
        def make() -> JobLease:
            made = new_lease()
            leases.append(made)
            return made

        return make

    def test_acquire_gives_a_generation_and_names_the_holder(self, lease: Callable[[], JobLease]) -> None:
        first = lease()
        assert first.generation == 0
        assert first.holder() is None
        generation = first.acquire()
        assert generation >= 1 and first.generation == generation
        first.check()
        holder = first.holder()
        assert holder is not None and str(os.getpid()) in holder

    def test_a_second_acquire_fails_at_once_naming_the_holder(
        self, lease: Callable[[], JobLease]
    ) -> None:
        first, second = lease(), lease()
        first.acquire()
        began = time.monotonic()
        with pytest.raises(JobLeaseError) as refused:
            second.acquire()
        assert time.monotonic() - began < 2.0
        holder = first.holder()
        assert holder is not None
        assert refused.value.holder == holder and holder in str(refused.value)
        assert second.generation == 0
        with pytest.raises(JobLeaseError):
            second.check()
        first.check()  # the failed attempt took nothing from the holder

    def test_generations_grow_and_an_older_one_is_fenced(self, lease: Callable[[], JobLease]) -> None:
        first, second = lease(), lease()
        one = first.acquire()
        first.release()
        first.release()  # idempotent
        assert first.holder() is None
        two = second.acquire()
        assert two > one
        with pytest.raises(JobLeaseError):
            first.check()
        second.check()
        second.release()
        third = lease()
        assert third.acquire() > two

    def test_wait_gives_up_after_its_timeout(self, lease: Callable[[], JobLease]) -> None:
        first, second = lease(), lease()
        first.acquire()
        began = time.monotonic()
        with pytest.raises(JobLeaseError):
            second.acquire(wait=True, timeout=0.5)
        waited = time.monotonic() - began
        assert 0.4 <= waited < 5.0

    def test_wait_takes_the_lease_once_it_is_released(self, lease: Callable[[], JobLease]) -> None:
        first, second = lease(), lease()
        one = first.acquire()
        releaser = threading.Timer(0.3, first.release)
        releaser.start()
        try:
            assert second.acquire(wait=True, timeout=10.0) > one
        finally:
            releaser.cancel()
        second.check()

    def test_a_killed_holder_frees_the_lease(
        self, lease: Callable[[], JobLease], holder_argv: list[str]
    ) -> None:
        child = subprocess.Popen(holder_argv, stdout=subprocess.PIPE, text=True)
        try:
            line = _read_line(child, timeout=30.0)
            assert line.startswith("HELD "), line
            held = int(line.split()[1])
            mine = lease()
            with pytest.raises(JobLeaseError) as refused:
                mine.acquire()
            assert str(child.pid) in str(refused.value)
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=10)
            assert mine.acquire(wait=True, timeout=self.release_seconds) > held
            mine.check()
        finally:
            if child.poll() is None:
                os.kill(child.pid, signal.SIGKILL)
                child.wait(timeout=10)
            if child.stdout is not None:
                child.stdout.close()


def _read_line(child: subprocess.Popen[str], timeout: float) -> str:
    """The child's first line of output, within ``timeout`` seconds."""
    result: list[str] = []
    reader = threading.Thread(
        target=lambda: result.append(child.stdout.readline() if child.stdout else ""), daemon=True
    )
    reader.start()
    reader.join(timeout)
    if not result:
        msg = f"the lease holder (pid {child.pid}) printed nothing within {timeout:g} s"
        raise AssertionError(msg)
    return result[0].strip()
