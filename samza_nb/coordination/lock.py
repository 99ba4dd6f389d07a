"""DistributedLock: a lock the processors of one job share, held in a ``with`` block.

Leaders create the job's streams under one, and processors agree on a run id under another.
Backends: a lease on a blob of its own (Azure, :class:`~samza_nb.coordination.azure.lock.AzureLock`)
and kazoo's lock recipe (ZooKeeper, :class:`~samza_nb.coordination.zk.lock.ZkDistributedLock`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["DistributedLock"]


class DistributedLock(ABC):
    """``with lock: …`` holds the lock for the block (``acquire`` blocks up to the lock's
    timeout) and releases it on the way out, whether or not the block raised."""

    @abstractmethod
    def acquire(self, timeout: float | None = None) -> None:
        """Block until held; CoordinationError after ``timeout`` seconds (default the lock's)."""

    @abstractmethod
    def release(self) -> None:
        """Give the lock up."""

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
