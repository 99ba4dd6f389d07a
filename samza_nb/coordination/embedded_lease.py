"""EmbeddedJobLease: the job lease of a job on one machine, an OS file lock on its job home.

The lock is ``flock`` on ``{job home}/job.lock``: exclusive, never blocking, and released by
the kernel when the holding process dies in any way (SIGKILL included), so a crashed run never
leaves a stale lease behind. The file holds who holds it (pid, host, start time, generation)
for the error a second run gets. Each acquisition bumps the job's generation, kept in the
metadata store under :data:`GENERATION_KEY`; the run passes :attr:`EmbeddedJobLease.fence` to
its commits (``store.put_all(entries, fence=lease.fence)``) and the store refuses any commit
of an older generation inside its own transaction.

>>> import tempfile, pathlib
>>> from samza_nb.metadata import InMemoryMetadataStore
>>> home = pathlib.Path(tempfile.mkdtemp())
>>> store = InMemoryMetadataStore()
>>> first = EmbeddedJobLease(home, store)
>>> first.acquire()
1
>>> EmbeddedJobLease(home, store).acquire()  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
samza_nb.errors.JobLeaseError: job home ... is in use by pid ... on ... (generation 1); ...
>>> first.release()
>>> EmbeddedJobLease(home, store).acquire()
2
>>> import shutil; shutil.rmtree(home)
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import socket
import threading
import time
import weakref
from pathlib import Path

from samza_nb.coordination.lease import JobLease
from samza_nb.errors import JobLeaseError
from samza_nb.metadata.base import Fence, MetadataStore, generation_of, namespaced_key
from samza_nb.secrecy import private_dir

__all__ = ["GENERATION_KEY", "LOCK_FILE_NAME", "EmbeddedJobLease"]

#: The metadata-store key of the job's lease generation (decimal digits).
GENERATION_KEY = namespaced_key("job-lease", "generation")
#: The lock file inside the job home.
LOCK_FILE_NAME = "job.lock"

_POLL_SECONDS = 0.1
# A non-waiting acquire retries this long: holder() probes the lock for an instant.
_PROBE_GRACE_SECONDS = 0.2

# Leases held in this process. A forked child (a Spark worker, a subprocess before exec) closes
# its copies of their descriptors, so the lock dies with the process that took it.
_HELD: weakref.WeakSet[EmbeddedJobLease] = weakref.WeakSet()


def _close_inherited() -> None:
    for lease in list(_HELD):
        lease._forget_after_fork()


os.register_at_fork(after_in_child=_close_inherited)


#: What a run refused by a held lease may do instead.
_QUEUE_BEHIND = "to queue behind it: run(..., lease_wait=True) in Python, samza-nb run --wait in a shell"

class EmbeddedJobLease(JobLease):
    """The lease of the job whose home is ``job_home``, with its generation in ``store``.

    ``label`` (a run id, a processor) is added to the holder's description.
    """

    def __init__(
        self,
        job_home: str | os.PathLike[str],
        store: MetadataStore,
        *,
        label: str | None = None,
        when_busy: str = _QUEUE_BEHIND,
    ) -> None:
        """``when_busy``: what a failed acquire without waiting tells to do (by default, how to
        queue a run behind the one holding the lease)."""
        self.job_home = Path(job_home).expanduser()
        self.store = store
        self.label = label
        self.when_busy = when_busy
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._generation = 0
        self._holder_text = ""

    def __repr__(self) -> str:
        state = f"generation {self._generation}" if self._fd is not None else "not held"
        return f"EmbeddedJobLease({str(self.job_home)!r}, {state})"

    @property
    def lock_file(self) -> Path:
        return self.job_home / LOCK_FILE_NAME

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def fence(self) -> Fence:
        """``(GENERATION_KEY, generation)``: pass it to ``put_all(..., fence=)`` to commit."""
        return GENERATION_KEY, self._generation

    # -- taking and giving up -----------------------------------------------------------------

    def acquire(self, *, wait: bool = False, timeout: float | None = None) -> int:
        with self._lock:
            if self._fd is not None:
                msg = f"{self!r} is already held by this run; release it before acquiring again"
                raise JobLeaseError(msg, holder=self._describe())
            fd = self._open()
            try:
                self._lock_or_fail(fd, wait=wait, timeout=timeout)
                generation = self._bump()
                self._generation = generation
                self._write_holder(fd)
            except BaseException:
                os.close(fd)  # Closing drops the lock, if it was taken.
                raise
            self._fd = fd
            _HELD.add(self)
            return generation

    def release(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
            _HELD.discard(self)
            if fd is None:
                return
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)

    def holder(self) -> str | None:
        if self._fd is not None:
            return self._describe()
        try:
            fd = os.open(self.lock_file, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return self._read_holder(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def check(self) -> None:
        if self._fd is None:
            msg = f"{self!r}: this run does not hold the job lease of {str(self.job_home)!r}"
            raise JobLeaseError(msg, holder=self.holder())
        if not self._lock_file_is_mine(self._fd):
            msg = (
                f"fenced: the job home {str(self.job_home)!r} was deleted or replaced while this "
                "run held its lease; another run may own it now"
            )
            raise JobLeaseError(msg, holder=self.holder())
        current = self._stored_generation()
        if current != self._generation:
            msg = (
                f"fenced: this run holds generation {self._generation} of the job lease of "
                f"{str(self.job_home)!r} but generation {current} is current"
            )
            raise JobLeaseError(msg)

    def __enter__(self) -> EmbeddedJobLease:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    # -- helpers ------------------------------------------------------------------------------

    def _open(self) -> int:
        try:
            private_dir(self.job_home)
            return os.open(self.lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            msg = f"cannot open the job lock file {str(self.lock_file)!r}: {error.strerror}"
            raise JobLeaseError(msg) from error

    def _lock_or_fail(self, fd: int, *, wait: bool, timeout: float | None) -> None:
        began = time.monotonic()
        limit = (timeout if timeout is not None else float("inf")) if wait else _PROBE_GRACE_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            waited = time.monotonic() - began
            if waited >= limit:
                holder = self._read_holder(fd)
                how = (
                    f" (still, after waiting {waited:.1f} s)"
                    if wait
                    else f" ({self.when_busy})"
                )
                msg = (
                    f"job home {str(self.job_home)!r} is in use by {holder}; only one run of a "
                    f"job may run at a time{how}"
                )
                if holder.startswith(f"pid {os.getpid()} on {socket.gethostname()} "):
                    msg += (
                        "; that is this process: a run started earlier here (in this notebook "
                        "kernel?) still runs. Stop it with its Job (job.stop(), %samza stop JOB), "
                        f"or, if no name holds it any more, drain it: samza-nb drain --job-home "
                        f"{self.job_home} --wait (from a terminal, or !samza-nb ... in a cell)"
                    )
                raise JobLeaseError(msg, holder=holder)
            time.sleep(min(_POLL_SECONDS, max(0.0, limit - waited)))

    def _lock_file_is_mine(self, fd: int) -> bool:
        """Whether the lock file in the job home is still the file this run locked."""
        try:
            path = os.stat(self.lock_file)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (path.st_dev, path.st_ino) == (held.st_dev, held.st_ino)

    def _stored_generation(self) -> int:
        return generation_of(self.store.get(GENERATION_KEY), repr(self.store))

    def _bump(self) -> int:
        # Only the lock holder bumps, so read-then-write cannot race another acquirer here.
        generation = self._stored_generation() + 1
        self.store.put(GENERATION_KEY, str(generation).encode())
        return generation

    def _write_holder(self, fd: int) -> None:
        record: dict[str, object] = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "generation": self._generation,
        }
        if self.label:
            record["label"] = self.label
        self._holder_text = _describe_record(record)
        data = json.dumps(record).encode()
        # Written over the old text, then cut to length: a reader never sees an empty file.
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))

    def _describe(self) -> str:
        return self._holder_text or f"pid {os.getpid()}"

    @staticmethod
    def _read_holder(fd: int) -> str:
        try:
            data = os.pread(fd, 4096, 0)
            return _describe_record(json.loads(data))
        except (OSError, ValueError, TypeError, KeyError):
            return "another process (it has not written its description yet)"

    def _forget_after_fork(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _describe_record(record: dict[str, object]) -> str:
    text = f"pid {record['pid']} on {record['host']} since {record['since']}"
    text += f" (generation {record['generation']}"
    return text + (f", {record['label']})" if record.get("label") else ")")
