"""The pool's end of the socket to one resident worker (runtime/executors/resident_workers.py; the
worker's end is ``serve_resident`` in runtime/executors/worker_epochs.py).

Messages to the worker: ``("epochs", digest, plan blob or None, [(index, assignment), ...])``
(the blob only the first time the worker sees the plan), ``("release", [task store folder,
...])`` or None (return). From it: per task epoch ``(index, result, traceback or None, whether
it keeps the task's stores open)``; per release ``("released", stores closed)``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from samza_nb.runtime.epoch import EpochAssignment

__all__ = ["WorkerLink", "kill_workers", "process_alive"]

_log = logging.getLogger("samza_nb.runtime.executors.resident_workers")

#: How long a failed epoch waits for the workers it killed to be gone.
_EXIT_WAIT_S = 10.0


@dataclass(eq=False)
class WorkerLink:
    """One connected resident worker: its Spark partition, its process and the plans it has."""

    connection: Connection
    slot: int
    pid: int
    digests: set[str] = field(default_factory=set)

    def hand(self, digest: str, blob: bytes, tasks: list[tuple[int, EpochAssignment]]) -> bool:
        """Send ``tasks`` of the plan ``digest``; False (and the link closed) when the worker
        is gone."""
        known = digest in self.digests
        try:
            self.connection.send(("epochs", digest, None if known else blob, tasks))
        except (OSError, ValueError):
            self.goodbye()
            return False
        self.digests.add(digest)
        return True

    def answer(self) -> tuple[int, Any, str | None, bool]:
        """The next task epoch's answer: (index, result, traceback or None, keeps its stores).
        Raises EOFError or OSError when the worker is gone."""
        index, result, failure, keeps = self.connection.recv()
        return index, result, failure, bool(keeps)

    def release(self, folders: list[str]) -> bool:
        """Have the worker close the stores it keeps of the tasks at ``folders``; False (and
        the link closed) when it is gone."""
        try:
            self.connection.send(("release", folders))
            answer = self.connection.recv()
        except (EOFError, OSError, ValueError):
            self.goodbye()
            return False
        return bool(answer[0] == "released")

    def goodbye(self) -> None:
        """Tell a worker that is not running a task epoch to return, and close the link."""
        with contextlib.suppress(OSError, ValueError):
            self.connection.send(None)
        with contextlib.suppress(OSError):
            self.connection.close()


def process_alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (a killed worker stays a zombie until the PySpark
    daemon, its parent, reaps it: that counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def kill_workers(workers: Iterable[WorkerLink]) -> None:
    """Kill ``workers`` (each still running a task epoch of a failed epoch: Spark's
    cancellation kills a task's Python worker the same way) and wait, bounded, until they
    are gone."""
    pids = []
    for worker in workers:
        with contextlib.suppress(OSError):
            os.kill(worker.pid, signal.SIGKILL)
            pids.append(worker.pid)
        with contextlib.suppress(OSError):
            worker.connection.close()
    deadline = time.monotonic() + _EXIT_WAIT_S
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if process_alive(pid)]
        if pids:
            time.sleep(0.02)
    if pids:
        _log.warning("resident workers: processes %s still alive %.0f s after SIGKILL", pids, _EXIT_WAIT_S)
