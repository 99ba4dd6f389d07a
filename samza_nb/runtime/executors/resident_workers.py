"""Resident workers: Spark Python workers held by one long-running Spark job, each taking task
epochs from the job's process over a local socket.

A Spark job costs 25–60 ms here whatever it carries (scheduling, the job's function handed to
a Python worker, the results collected), and a processor ran one per epoch: the quickstart's
five epochs paid about 300 ms of its second for it. A resident worker is handed task epochs
and returns each result in one message. Structured Streaming's continuous processing runs the
same way: long-running Spark tasks to which the driver hands epochs.

A pool belongs to one executor (one job: its processors take turns on it), so a worker that
dies fails only that job, as a failed Spark job did. It holds Spark cores while it lasts, so it
gives them back (its workers return, its Spark job ends) when its job ends, when no epoch came
for ``idle_s``, and once no epoch of it runs while another Spark job of the session is active
(a notebook's DataFrame query, another job's pool: looked at every 50 ms; no new epoch starts
on it meanwhile); the next epoch starts a new pool.

A worker keeps the stores of the tasks it ran open (runtime/task/kept_stores.py), and their next
epochs go to it; a worker keeping more of an epoch's tasks than its share releases the excess
when the epoch starts.

A failed epoch stops its other task epochs before the error is raised: their workers are
killed, as Spark's cancellation kills a task's Python worker, so no task of a failed epoch
keeps writing its stores once the caller may run it again.

The socket is a Unix domain socket in a folder only this user can enter, and both ends prove
they know a random key (``multiprocessing.connection``'s HMAC handshake) before anything is
unpickled.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import secrets
import threading
import time
from collections import deque
from functools import partial
from multiprocessing.connection import Connection, wait
from typing import Any

from samza_nb.errors import JobError, WorkerLostError
from samza_nb.runtime.epoch import EpochAssignment, EpochResult
from samza_nb.runtime.executors.lost_workers import failure_reason
from samza_nb.runtime.executors.other_spark_jobs import OtherSparkJobs, ended, ending
from samza_nb.runtime.executors.socket_folders import close_listener, open_listener, wake_accept
from samza_nb.runtime.executors.task_homes import TaskHomes, guided_chunk
from samza_nb.runtime.executors.worker_epochs import serve_resident
from samza_nb.runtime.executors.worker_link import WorkerLink, kill_workers
from samza_nb.runtime.task.stores import task_store_folder

__all__ = ["ResidentWorkers", "ResidentWorkersClosed"]

_log = logging.getLogger("samza_nb.runtime.executors.resident_workers")

#: Spark job group of every resident job (followed by the process id and a number).
_GROUP_PREFIX = "samza-nb-resident-"
#: How often a wait for a worker looks whether the resident Spark job is still running.
_LIVENESS_S = 0.5
#: How long closing waits for the resident job to end before cancelling it.
_CLOSE_WAIT_S = 2.0
#: How often an open pool looks whether another Spark job waits for its cores: while epochs
#: come, and once none came for ``_QUIET_AFTER_S`` (each look is a py4j round trip: 20 a
#: second cost the JVM and the job's process about 3% of a core between epochs).
_WATCH_S = 0.05
_WATCH_QUIET_S = 0.25
_QUIET_AFTER_S = 1.0

_pools = itertools.count(1)


class ResidentWorkersClosed(Exception):
    """The pool closed (idle, giving its cores back, or its Spark job ended) before any task
    epoch of the epoch was handed out: the executor runs the epoch on a new pool. Never leaves
    the executor."""


class ResidentWorkers:
    """Resident Python workers of ``context``, one per partition of ``slots`` (see the module)."""

    def __init__(self, context: Any, slots: Any, *, idle_s: float = 60.0) -> None:
        self.context = context
        self._slots = int(slots.getNumPartitions())
        #: How long the pool waits for an epoch before it gives its cores back.
        self.idle_s = idle_s
        authkey = secrets.token_bytes(32)
        self._listener, self._address = open_listener("samza-nb-workers-", authkey)
        self.group = f"{_GROUP_PREFIX}{os.getpid()}-{next(_pools)}"
        self._description = "samza_nb: resident Python workers taking task epochs"
        self._cond = threading.Condition()
        self._free: list[WorkerLink] = []
        self._closed = False
        self._running = 0
        #: Another Spark job waits for the cores: no new epoch, close once none runs.
        self._yield = False
        self._last_used = time.monotonic()
        self._job_error: BaseException | None = None
        self._job_done = False
        #: Write ends of the pipes running epochs wait on besides their busy workers: a byte
        #: says a worker became free (connected, or done with another epoch's task epochs).
        self._wakers: set[int] = set()
        #: Which worker keeps which task's stores open: the task's epochs go to it.
        self._homes: TaskHomes[WorkerLink] = TaskHomes()
        #: Task store folders busy workers are to release when they finish their task epochs.
        self._to_release: dict[WorkerLink, set[str]] = {}
        #: Workers that ever connected (the pool closes when any of them is lost).
        self._connected = 0
        #: Epochs started on the pool so far.
        self._runs = 0
        self._other_jobs = OtherSparkJobs(context, self.group)
        function = partial(serve_resident, self._address, authkey)
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
            ended(self.group)
        # Its workers are gone (cancelled, the session stopped, or closed): no epoch may start.
        self.close()

    def _accept(self) -> None:
        """Every worker that connects, until the pool closes (a Spark master with task retries,
        ``local[N,F]``, starts a new worker for a failed resident task)."""
        while True:
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
                worker = WorkerLink(connection, slot, pid)
                self._connected += 1
                self._free.append(worker)
                self._worker_freed()

    def _watch(self) -> None:
        """Give the cores back once no epoch runs and either none came for ``idle_s`` or
        another Spark job of the session is active (asked every ``_WATCH_S``, every
        ``_WATCH_QUIET_S`` once no epoch came for ``_QUIET_AFTER_S``; not each time the pool's
        condition wakes this thread)."""
        waiting = False
        next_look = 0.0
        while True:
            now = time.monotonic()
            if now >= next_look:
                waiting = self._other_jobs.active()
                quiet = self._running == 0 and now - self._last_used >= _QUIET_AFTER_S
                next_look = time.monotonic() + (_WATCH_QUIET_S if quiet else _WATCH_S)
            with self._cond:
                if self._closed:
                    return
                self._yield = waiting
                idle = time.monotonic() - self._last_used >= self.idle_s
                if self._running == 0 and (waiting or idle):
                    # Closed under the lock: an epoch starting now sees it and takes a new pool.
                    self._closed = True
                    break
                self._cond.wait(max(0.001, next_look - time.monotonic()))
        self._shut_down()

    # -- epochs ----------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def run(self, digest: str, blob: bytes, assignments: list[EpochAssignment]) -> list[EpochResult]:
        """Every task epoch on a free worker, largest backlog first; the results in order.

        A free worker takes the next task epochs it may run (a task whose stores a worker
        keeps open goes to that worker only), a chunk of them at a time (:func:`guided_chunk`).
        When the epoch starts, a free worker keeping more tasks than its share releases the
        excess, so the tasks spread again over the workers (runtime/executors/task_homes.py)."""
        sizes = [assignment.backlog() + 1 for assignment in assignments]
        folders = [task_store_folder(a.store_root, a.location_id, a.task_name) for a in assignments]
        order = sorted(range(len(assignments)), key=lambda i: (-sizes[i], i))
        left = sum(sizes)
        results: dict[int, EpochResult] = {}
        busy: dict[Connection, tuple[WorkerLink, deque[int]]] = {}
        handed = False
        woken, waker = os.pipe()
        os.set_blocking(waker, False)
        with self._cond:
            if self._closed or self._job_done or self._yield:
                os.close(woken)
                os.close(waker)
                raise ResidentWorkersClosed(self.group)
            self._running += 1
            self._runs += 1
            self._wakers.add(waker)
        try:
            self._spread(folders)
            while order or busy:
                while order:
                    taken_by = self._take(order, folders, block=not busy, handed=handed)
                    if taken_by is None:
                        break
                    worker, eligible = taken_by
                    chunk = guided_chunk(eligible, sizes, left, self._slots)
                    left -= sum(sizes[index] for index in chunk)
                    chosen = set(chunk)
                    order = [index for index in order if index not in chosen]
                    tasks = [(index, assignments[index]) for index in chunk]
                    if not worker.hand(digest, blob, tasks):
                        if not handed:  # an idle worker died: nothing of this epoch ran
                            raise ResidentWorkersClosed(self.group)
                        raise self._lost(worker, assignments[chunk[0]], None)
                    handed = True
                    busy[worker.connection] = (worker, deque(chunk))
                for connection in wait([*busy, woken] if order else list(busy), timeout=_LIVENESS_S):
                    if connection == woken:  # a worker became free: hand it the next chunk
                        os.read(woken, 4096)
                        continue
                    worker, pending = busy[connection]  # type: ignore[index]
                    index = pending.popleft()
                    results[index] = self._result(worker, index, assignments[index], folders[index])
                    if not pending:
                        del busy[connection]  # type: ignore[arg-type]
                        self._give_back(worker)
                if busy and self._job_done:
                    worker, pending = next(iter(busy.values()))
                    raise self._lost(worker, assignments[pending[0]], None)
        except BaseException:
            # The epoch failed: its task epochs still running stop now (their workers are
            # killed, as Spark's cancellation kills a task's worker), before anyone may run
            # the epoch again. Their connections are this run's to close.
            kill_workers(worker for worker, _pending in busy.values())
            self.close()
            raise
        finally:
            with self._cond:
                self._wakers.discard(waker)
                self._running -= 1
                self._last_used = time.monotonic()
                yielding = self._yield and self._running == 0 and not self._closed
                if yielding:
                    self._closed = True
                self._cond.notify_all()
            os.close(woken)
            os.close(waker)
            if yielding:
                self._shut_down()
        return [results[index] for index in range(len(assignments))]

    def _take(
        self, order: list[int], folders: list[str], *, block: bool, handed: bool
    ) -> tuple[WorkerLink, list[int]] | None:
        """A free worker and the task epochs of ``order`` it may run (runtime/executors/task_homes.py)."""
        with self._cond:
            while True:
                taken = self._homes.take(list(reversed(self._free)), order, folders, self._connected)
                if taken is not None:
                    self._free.remove(taken[0])
                    return taken
                if self._closed or self._job_done:
                    if not handed:
                        raise ResidentWorkersClosed(self.group)
                    raise self._ended()
                if not block:
                    return None
                # Free workers (if any) may run none of the tasks left: workers busy with
                # another epoch keep their stores.
                self._cond.wait(_LIVENESS_S)

    def _spread(self, folders: list[str]) -> None:
        """Before the epoch's hand-out: each free worker keeping more of its tasks than its
        share releases the excess."""
        with self._cond:
            excess = self._homes.excess(self._free, folders, self._connected)
            for worker, _folders in excess:
                self._free.remove(worker)
        self._release_from(excess)

    def release(self, folders: list[str]) -> None:
        """Have the workers keeping the stores of the tasks at ``folders`` close them: free
        workers now, busy ones when they finish their task epochs. No epoch goes to them for
        those tasks any more."""
        with self._cond:
            keepers = self._homes.keepers()
            self._homes.released(folders)
            doomed: dict[WorkerLink, list[str]] = {}
            for folder in folders:
                keeper = keepers.get(folder)
                if keeper is not None:
                    doomed.setdefault(keeper, []).append(folder)
            now = []
            for worker, kept in doomed.items():
                if worker in self._free:
                    self._free.remove(worker)
                    now.append((worker, kept))
                else:
                    self._to_release.setdefault(worker, set()).update(kept)
        self._release_from(now)

    def _release_from(self, workers: list[tuple[WorkerLink, list[str]]]) -> None:
        """Have each of ``workers`` (taken from the free list) release its folders, then give
        it back; the first that is gone closes the pool, and the others are told to return."""
        failed = False
        for worker, doomed in workers:
            if not failed and self._release(worker, doomed):
                with self._cond:
                    self._homes.released(doomed)
            else:
                failed = True
            self._give_back(worker)
        if failed:
            raise ResidentWorkersClosed(self.group)

    def _release(self, worker: WorkerLink, folders: list[str]) -> bool:
        """Have ``worker`` close the stores it keeps of the tasks at ``folders``; False (the
        pool closed) when it is gone."""
        if worker.release(folders):
            return True
        self.close()
        return False

    def _give_back(self, worker: WorkerLink) -> None:
        """A worker that finished its task epochs: free again (once it released the stores
        it was asked to meanwhile), or told to stop when the pool closed meanwhile (its
        connection was this run's, so this run closes it)."""
        with self._cond:
            doomed = sorted(self._to_release.pop(worker, ()))
        if doomed and not self._closed:
            if not self._release(worker, doomed):
                return
            with self._cond:
                self._homes.released(doomed)
        with self._cond:
            if not self._closed:
                self._free.append(worker)
                self._worker_freed()
                return
        worker.goodbye()

    def _worker_freed(self) -> None:
        """Wake every epoch waiting for a worker (called with the lock held)."""
        self._cond.notify_all()
        for waker in self._wakers:
            with contextlib.suppress(OSError):  # full (it wakes anyway) or just closed
                os.write(waker, b"!")

    def _result(self, worker: WorkerLink, index: int, assignment: EpochAssignment, folder: str) -> EpochResult:
        """The worker's result of the task epoch ``index``; its stores' keeper noted."""
        try:
            sent_for, result, failure, keeps = worker.answer()
        except (EOFError, OSError) as error:
            raise self._lost(worker, assignment, error) from error
        if failure is not None:
            msg = (
                f"the epoch of task {assignment.task_name} (checkpoint seq {assignment.seq}) raised "
                f"in its Spark Python worker (pid {worker.pid}):\n{failure}"
            )
            raise JobError(msg)
        if sent_for != index:
            msg = (
                f"resident worker (pid {worker.pid}) answered for task epoch {sent_for} while "
                f"{index} ({assignment.task_name}) was expected"
            )
            raise JobError(msg)
        with self._cond:
            self._homes.noted(folder, worker, keeps=keeps)
        return result

    def _lost(
        self, worker: WorkerLink, assignment: EpochAssignment, error: BaseException | None
    ) -> WorkerLostError:
        """The worker running ``assignment`` went away (killed, crashed, its Spark task
        cancelled); Spark's reason when the resident job says one."""
        with self._cond:
            self._cond.wait_for(lambda: self._job_done, timeout=_CLOSE_WAIT_S)
        reason = failure_reason(self._job_error) or (str(error) if error else "")
        msg = (
            f"the Spark Python worker (pid {worker.pid}) running the epoch of task "
            f"{assignment.task_name} (checkpoint seq {assignment.seq}) ended before it returned"
            + (f": {reason}" if reason else "")
            + "; nothing of the epoch was committed"
        )
        return WorkerLostError(msg)

    def _ended(self) -> WorkerLostError:
        if self._closed and not self._job_done:
            return WorkerLostError(f"resident workers {self.group} closed during the epoch")
        reason = failure_reason(self._job_error) or "its workers returned"
        return WorkerLostError(f"the resident Spark job {self.group} ended during the epoch: {reason}")

    # -- giving the cores back -------------------------------------------------------------------
    def end(self) -> None:
        """The job ended: its workers close every store they keep now, and the resident job
        ends in the background (about 20 ms the caller does not wait for). When an epoch
        ran or started meanwhile, or a worker is gone, waits for the workers to return, as
        :meth:`close`."""
        with self._cond:
            idle = self._running == 0 and not self._closed
            runs = self._runs
            folders = sorted(self._homes.keepers())
        if idle:
            try:
                self.release(folders)
            except ResidentWorkersClosed:
                idle = False
        with self._cond:  # closed in the same step as the check: no epoch starts after it
            background = idle and self._running == 0 and self._runs == runs
            if not self._mark_closed():
                return
        self._finish_closing(wait=not background)

    def close(self, *, wait: bool = True) -> None:
        """Tell every free worker to return and end the resident job (cancelled if a Spark task
        of it has not ended after a moment; in the background when ``wait`` is false). Workers
        busy with an epoch are told by the epoch's run once they finish. Idempotent."""
        with self._cond:
            if not self._mark_closed():
                return
        self._finish_closing(wait=wait)

    def _mark_closed(self) -> bool:
        """Close the pool (with the lock held); False when it already was."""
        if self._closed:
            return False
        self._closed = True
        if not self._job_done:  # ending, not waiting for cores: the next pool must know it
            ending(self.group)
        return True

    def _finish_closing(self, *, wait: bool) -> None:
        if wait:
            self._shut_down()
        else:
            threading.Thread(target=self._shut_down, name=f"{self.group}-close", daemon=True).start()

    def _shut_down(self) -> None:
        with self._cond:
            free, self._free = self._free, []
            self._cond.notify_all()
        for worker in free:
            worker.goodbye()
        wake_accept(self._address)
        close_listener(self._listener, self._address)
        with self._cond:
            done = self._cond.wait_for(lambda: self._job_done, timeout=_CLOSE_WAIT_S)
        if not done and self._running == 0:
            try:
                self.context.cancelJobGroup(self.group)
            except Exception as error:  # the session is stopping: its jobs end with it
                _log.debug("resident workers %s: cancel failed: %s", self.group, error)
