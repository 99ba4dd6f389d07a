"""Which resident worker keeps which task's stores open, and so which task epochs a free worker
may take, and how many of them at once (runtime/task/kept_stores.py,
runtime/executors/resident_workers.py).

A task whose stores a worker keeps open runs there only: RocksDB lets one process at a time
open a store. A task no worker keeps (a new one, or one without stores) goes to a free worker,
the one keeping the fewest of the epoch's tasks first, and only while that worker keeps fewer
than its share (the epoch's tasks over the connected workers). When every free worker already
has its share, the one keeping the fewest takes them rather than wait for a busy one. When an
epoch starts, a free worker keeping more than its share (the first worker to connect may have
taken three tasks of four) releases the excess, so the tasks spread again over the workers.

A free worker takes a chunk of the task epochs it may run, worth about ``1 / (2 × workers)``
of the work left (at least one): one at a time when an epoch has a few large ones, a handful
per message when it has many small ones (guided self-scheduling, as OpenMP's ``guided``), so 64
tasks that read nothing do not cost 64 round trips per worker.

Not thread-safe: the pool calls it under its lock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Generic, TypeVar

__all__ = ["TaskHomes", "guided_chunk"]

Worker = TypeVar("Worker")


def guided_chunk(eligible: Sequence[int], sizes: Sequence[int], left: int, workers: int) -> list[int]:
    """The first of ``eligible`` (task epoch indexes, in hand-out order) and those after it
    while their sizes (``sizes[index]``: backlog + 1) add up to at most ``left / (2 ×
    workers)``, the work left being ``left``."""
    chunk = [eligible[0]]
    share, taken = left / (2 * workers), sizes[eligible[0]]
    for index in eligible[1:]:
        if taken + sizes[index] > share:
            break
        chunk.append(index)
        taken += sizes[index]
    return chunk


def _share(tasks: int, workers: int) -> int:
    """The most tasks of an epoch one worker keeps when they are spread evenly."""
    return -(-tasks // max(1, workers))


class TaskHomes(Generic[Worker]):
    """Task store folder -> the worker keeping that task's stores open."""

    def __init__(self) -> None:
        self._keepers: dict[str, Worker] = {}

    def __len__(self) -> int:
        return len(self._keepers)

    def keepers(self) -> dict[str, Worker]:
        return dict(self._keepers)

    def noted(self, folder: str, worker: Worker, *, keeps: bool) -> None:
        """``worker`` ran the task at ``folder`` and says whether it keeps its stores open."""
        if keeps:
            self._keepers[folder] = worker
        elif self._keepers.get(folder) is worker:
            del self._keepers[folder]

    def released(self, folders: Sequence[str]) -> None:
        for folder in folders:
            self._keepers.pop(folder, None)

    def take(
        self, free: Sequence[Worker], order: Sequence[int], folders: Sequence[str], workers: int
    ) -> tuple[Worker, list[int]] | None:
        """The free worker to hand task epochs next and those of ``order`` (indexes into
        ``folders``) it may run, its own first; None when no free worker may run any."""
        keepers = self._keepers
        keeps = Counter(keepers.get(folder) for folder in folders)
        share = _share(len(folders), workers)
        ranked = sorted(free, key=lambda worker: keeps[worker])
        unkept = [index for index in order if folders[index] not in keepers]
        for worker in ranked:
            own = [index for index in order if keepers.get(folders[index]) is worker]
            anyone = unkept[: max(0, share - keeps[worker])]
            if own or anyone:
                return worker, own + anyone
        if ranked and unkept:
            return ranked[0], unkept
        return None

    def excess(self, free: Sequence[Worker], folders: Sequence[str], workers: int) -> list[tuple[Worker, list[str]]]:
        """Each free worker keeping more of the epoch's tasks (``folders``) than its share, with
        the folders it should release."""
        share = _share(len(folders), workers)
        over = []
        for worker in free:
            kept = [folder for folder in folders if self._keepers.get(folder) is worker]
            if len(kept) > share:
                over.append((worker, kept[share:]))
        return over
