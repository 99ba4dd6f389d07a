"""Resident workers: Spark Python workers held by one long-running Spark job, each taking task
epochs from the job's process over a local socket, one after another.

A Spark job costs 25–60 ms here whatever it carries (scheduling, the job's function handed to
a Python worker, the results collected), and a processor runs one per epoch: the quickstart's
five epochs paid about 300 ms of its second for it. A resident worker is handed a task epoch
and returns its result in one message each way. Structured Streaming's continuous processing
runs the same way: long-running Spark tasks to which the driver hands epochs.

The workers are the process's, one pool per Spark context and number of workers, shared by
every job of the process (jobs run one after another in a notebook reuse them; jobs running
side by side take turns on them). The resident job holds Spark cores while it lasts, so it
gives them back (its workers return, the job ends) when no epoch came for a while, and as soon
as no epoch runs while another Spark job of the session waits for cores (a notebook's
DataFrame query, say: looked at every 50 ms); the next epoch starts a new one. Task epochs go
to whichever worker is free, largest backlog first, so a worker that finished early takes the
next one.

The socket is a Unix domain socket in a folder only this user can enter, and both ends prove
they know a random key (``multiprocessing.connection``'s HMAC handshake) before anything is
unpickled.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.connection import Client, Connection, Listener, wait
from typing import Any

from samza_nb.errors import JobError
from samza_nb.runtime.epoch import EpochAssignment, EpochResult

__all__ = ["ResidentWorkers", "ResidentWorkersClosed", "resident_workers"]

_log = logging.getLogger("samza_nb.runtime.resident_workers")

#: How often a wait for a worker looks whether the resident Spark job is still running.
_LIVENESS_S = 0.5
#: How long closing waits for the resident job to end before cancelling it.
_CLOSE_WAIT_S = 2.0
#: How often an open pool looks whether another Spark job waits for its cores.
_WATCH_S = 0.05

_pools = itertools.count(1)
_shared: dict[int, ResidentWorkers] = {}
#: Workers -> an RDD of that many one-element partitions (of the session's context), made once:
#: a ``parallelize`` writes a temporary file the JVM reads, about 10 ms.
_slot_rdds: dict[int, Any] = {}
_shared_lock = threading.Lock()


def resident_workers(context: Any, slots: int, *, idle_s: float) -> ResidentWorkers:
    """The process's open pool of ``slots`` resident workers of ``context`` (a new one when
    there is none); it waits ``idle_s`` for an epoch before giving its cores back."""
    with _shared_lock:
        pool = _shared.get(slots)
        if pool is None or pool.closed or pool.context is not context:
            if pool is not None:
                pool.close()
            rdd = _slot_rdds.get(slots)
            if rdd is None or rdd.context is not context:
                rdd = _slot_rdds[slots] = context.parallelize(range(slots), slots)
            pool = _shared[slots] = ResidentWorkers(context, rdd)
        pool.idle_s = idle_s
        return pool


class ResidentWorkersClosed(Exception):
    """The pool closed (idle, or it gave its cores back) before an epoch could start on it:
    the executor starts a new one. Never leaves the executor."""


@dataclass(eq=False)
class _Worker:
    """One connected resident worker: its Spark partition, its process and the plans it has."""

    connection: Connection
    slot: int
    pid: int
    digests: set[str] = field(default_factory=set)


def _serve(address: str, authkey: bytes, slot: int, _items: Any) -> Iterator[int]:
    """The resident job's function, in a Python worker: take task epochs until told to stop
    or until the job's process goes away."""
    from samza_nb.runtime.worker_epochs import run_in_worker

    try:
        connection = Client(address, family="AF_UNIX", authkey=authkey)
    except OSError:  # the pool closed before this Spark task started: nothing to do
        yield slot
        return
    try:
        connection.send((slot, os.getpid()))
        while True:
            message = connection.recv()
            if message is None:
                break
            digest, blob, tasks = message
            for index, assignment in tasks:
                try:
                    result = run_in_worker(digest, blob, assignment)
                except Exception:  # an engine bug: the driver raises it with this traceback
                    connection.send((index, None, traceback.format_exc()))
                    break
                connection.send((index, result, None))
    except (EOFError, OSError):  # the job's process closed the pool or ended
        pass
    finally:
        connection.close()
    yield slot


class ResidentWorkers:
    """Resident Python workers of ``context``, one per partition of ``slots`` (see the module)."""

    def __init__(self, context: Any, slots: Any, *, idle_s: float = 60.0) -> None:
        self.context = context
        self._slots = int(slots.getNumPartitions())
        #: How long the pool waits for an epoch before it gives its cores back.
        self.idle_s = idle_s
        self._folder = tempfile.mkdtemp(prefix="samza-nb-workers-")
        self._address = os.path.join(self._folder, "epochs.sock")
        authkey = secrets.token_bytes(32)
        self._listener = Listener(self._address, family="AF_UNIX", authkey=authkey)
        self.group = f"samza-nb-resident-{os.getpid()}-{next(_pools)}"
        self._description = "samza_nb: resident Python workers taking task epochs"
        self._cond = threading.Condition()
        self._free: list[_Worker] = []
        self._workers: list[_Worker] = []
        self._closed = False
        self._running = 0
        #: Another Spark job waits for the cores: close once no epoch runs.
        self._yield = False
        self._last_used = time.monotonic()
        self._job_error: BaseException | None = None
        self._job_done = False
        function = partial(_serve, self._address, authkey)
        threading.Thread(target=self._hold, args=(slots, function), name=self.group, daemon=True).start()
        threading.Thread(target=self._accept, name=f"{self.group}-accept", daemon=True).start()
        threading.Thread(target=self._watch, name=f"{self.group}-watch", daemon=True).start()

    # -- the pool's threads ----------------------------------------------------------------------
    def _hold(self, rdd: Any, function: Any) -> None:
        """The resident Spark job: it lasts until every worker returns."""
        try:
            self.context.setJobGroup(self.group, self._description, interruptOnCancel=True)
            rdd.mapPartitionsWithIndex(function).collect()
        except BaseException as error:
            self._job_error = error
        finally:
            with self._cond:
                self._job_done = True
                self._cond.notify_all()
        # Its workers are gone (cancelled, the session stopped, or closed): no epoch may start.
        self.close()

    def _accept(self) -> None:
        while len(self._workers) < self._slots:
            try:
                connection = self._listener.accept()
                slot, pid = connection.recv()
            except Exception as error:  # closed (woken by close()), or a peer without the key
                with self._cond:
                    if self._closed:
                        return
                _log.warning("resident workers %s: a connection failed its handshake: %s", self.group, error)
                continue
            with self._cond:
                if self._closed:
                    connection.close()
                    return
                worker = _Worker(connection, slot, pid)
                self._workers.append(worker)
                self._free.append(worker)
                self._cond.notify_all()

    def _watch(self) -> None:
        """Give the cores back once no epoch runs and either none came for ``idle_s`` or
        another Spark job of the session waits."""
        while True:
            waiting = self._others_waiting()
            with self._cond:
                if self._closed:
                    return
                self._yield = waiting
                idle = time.monotonic() - self._last_used >= self.idle_s
                if self._running == 0 and (waiting or idle):
                    # Closed under the lock: an epoch starting now sees it and takes a new pool.
                    self._closed = True
                    break
                self._cond.wait(_WATCH_S)
        self._shut_down()

    def _others_waiting(self) -> bool:
        """Whether another Spark job of the session is running or waiting for cores."""
        try:
            tracker = self.context.statusTracker()
            ours = set(tracker.getJobIdsForGroup(self.group))
            return any(job not in ours for job in tracker.getActiveJobsIds())
        except Exception:  # a stopped context: the resident job ends with it
            return False

    # -- epochs ----------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def run(self, digest: str, blob: bytes, assignments: list[EpochAssignment]) -> list[EpochResult]:
        """Every task epoch on a free worker, largest backlog first; the results in order.

        A free worker takes the next task epochs worth about ``1 / (2 × workers)`` of the work
        left (at least one): one at a time when an epoch has a few large ones, a handful per
        message when it has many small ones (guided self-scheduling, as OpenMP's ``guided``),
        so 64 tasks that read nothing do not cost 64 round trips per worker."""
        sizes = [assignment.backlog() + 1 for assignment in assignments]
        order = deque(sorted(range(len(assignments)), key=lambda i: (-sizes[i], i)))
        left = sum(sizes)
        results: dict[int, EpochResult] = {}
        busy: dict[Connection, tuple[_Worker, deque[int]]] = {}
        with self._cond:
            if self._closed or self._job_done:
                raise ResidentWorkersClosed(self.group)
            self._running += 1
        try:
            while order or busy:
                while order:
                    worker = self._take(block=not busy)
                    if worker is None:
                        break
                    chunk = [order.popleft()]
                    share, taken = left / (2 * self._slots), sizes[chunk[0]]
                    while order and taken + sizes[order[0]] <= share:
                        chunk.append(order.popleft())
                        taken += sizes[chunk[-1]]
                    left -= taken
                    self._hand(worker, digest, blob, [(index, assignments[index]) for index in chunk])
                    busy[worker.connection] = (worker, deque(chunk))
                for connection in wait(list(busy), timeout=_LIVENESS_S):
                    worker, pending = busy[connection]  # type: ignore[index]
                    results[pending[0]] = self._result(worker, assignments[pending[0]])
                    pending.popleft()
                    if not pending:
                        del busy[connection]  # type: ignore[arg-type]
                        with self._cond:
                            self._free.append(worker)
                if busy and self._job_done:
                    worker, pending = next(iter(busy.values()))
                    raise self._lost(worker, assignments[pending[0]], None)
        except BaseException:
            self.close()
            raise
        finally:
            with self._cond:
                self._running -= 1
                self._last_used = time.monotonic()
                yielding = self._yield and self._running == 0 and not self._closed
                if yielding:
                    self._closed = True
                self._cond.notify_all()
            if yielding:
                self._shut_down()
        return [results[index] for index in range(len(assignments))]

    def _take(self, *, block: bool) -> _Worker | None:
        with self._cond:
            while not self._free:
                if self._closed or self._job_done:
                    raise self._ended()
                if not block:
                    return None
                self._cond.wait(_LIVENESS_S)
            return self._free.pop()

    def _hand(self, worker: _Worker, digest: str, blob: bytes, tasks: list[tuple[int, EpochAssignment]]) -> None:
        known = digest in worker.digests
        try:
            worker.connection.send((digest, None if known else blob, tasks))
        except OSError as error:
            raise self._lost(worker, tasks[0][1], error) from error
        worker.digests.add(digest)

    def _result(self, worker: _Worker, assignment: EpochAssignment) -> EpochResult:
        try:
            _index, result, failure = worker.connection.recv()
        except (EOFError, OSError) as error:
            raise self._lost(worker, assignment, error) from error
        if failure is not None:
            msg = (
                f"the epoch of task {assignment.task_name} (checkpoint seq {assignment.seq}) raised "
                f"in its Spark Python worker (pid {worker.pid}):\n{failure}"
            )
            raise JobError(msg)
        return result

    def _lost(self, worker: _Worker, assignment: EpochAssignment, error: BaseException | None) -> JobError:
        """The worker running ``assignment`` went away (killed, crashed, its Spark task
        cancelled); Spark's reason when the resident job says one."""
        with self._cond:
            self._cond.wait_for(lambda: self._job_done, timeout=_CLOSE_WAIT_S)
        reason = _first_line(self._job_error) or (str(error) if error else "")
        msg = (
            f"the Spark Python worker (pid {worker.pid}) running the epoch of task "
            f"{assignment.task_name} (checkpoint seq {assignment.seq}) ended before it returned"
            + (f": {reason}" if reason else "")
            + "; nothing of the epoch was committed"
        )
        return JobError(msg)

    def _ended(self) -> JobError:
        if self._closed:
            return JobError(f"resident workers {self.group} are closed")
        reason = _first_line(self._job_error) or "its workers returned"
        return JobError(f"the resident Spark job {self.group} ended: {reason}")

    # -- giving the cores back -------------------------------------------------------------------
    def close(self) -> None:
        """Tell every worker to return and end the resident job (cancelled if a Spark task of
        it has not started after a moment). Idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
        self._shut_down()

    def _shut_down(self) -> None:
        with self._cond:
            workers = list(self._workers)
            self._cond.notify_all()
        for worker in workers:
            try:
                worker.connection.send(None)
            except OSError:
                pass  # already gone
            worker.connection.close()
        self._wake_accept()
        self._listener.close()
        shutil.rmtree(self._folder, ignore_errors=True)
        with self._cond:
            done = self._cond.wait_for(lambda: self._job_done, timeout=_CLOSE_WAIT_S)
        if not done:
            try:
                self.context.cancelJobGroup(self.group)
            except Exception as error:  # the session is stopping: its jobs end with it
                _log.debug("resident workers %s: cancel failed: %s", self.group, error)

    def _wake_accept(self) -> None:
        """Unblock the accepting thread (closing a listening socket does not) with a
        connection that fails the handshake."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(1.0)
                probe.connect(self._address)
        except OSError:
            pass  # nothing is accepting any more


def _first_line(error: BaseException | None) -> str:
    """What a Spark job's failure says happened, in a sentence: py4j's first line only names
    the call, and Spark nests the task's reason after its stage's."""
    if error is None:
        return ""
    lines = [line.strip().lstrip(": ") for line in str(error).splitlines() if line.strip()]
    telling = [line for line in lines if "Job aborted" in line or "Exception:" in line or "Error:" in line]
    line = (telling or lines or [type(error).__name__])[0]
    reason = line.rsplit("Exception: ", 1)[-1].split(". ", 1)[0]
    return reason if len(reason) <= 300 else reason[:300] + "…"
