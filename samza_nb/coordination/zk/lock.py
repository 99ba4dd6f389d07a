"""A distributed lock under ``lock_<id>`` (Samza's ZkDistributedLock, SAMZA.md §8.1).

Kazoo's lock recipe: the lowest ephemeral-sequential contender holds it, each waiter watches
its predecessor, and a holder whose session ends releases it. Used to agree on one run id per
deployment and to let one processor create intermediate streams.
"""

from __future__ import annotations

from kazoo.exceptions import KazooException, LockTimeout
from kazoo.recipe.lock import Lock

from samza_nb.coordination.lock import DistributedLock
from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zk_client import ZkClient

__all__ = ["ZkDistributedLock"]


class ZkDistributedLock(DistributedLock):
    """``with ZkDistributedLock(zk, keys, "run-id", "p1", timeout=10): …``."""

    def __init__(
        self, zk: ZkClient, keys: ZkKeyBuilder, lock_id: str, holder: str, *, timeout: float = 30.0
    ) -> None:
        self.zk = zk
        self.path = keys.lock(lock_id)
        self.timeout = timeout
        self._lock = Lock(zk.kazoo, self.path, identifier=holder)

    def __repr__(self) -> str:
        return f"ZkDistributedLock({self.path!r}, held={self._lock.is_acquired})"

    def acquire(self, timeout: float | None = None) -> None:
        """Block until held; CoordinationError after ``timeout`` seconds (default the lock's)."""
        wait = self.timeout if timeout is None else timeout
        try:
            acquired = self._lock.acquire(blocking=True, timeout=wait)
        except LockTimeout:
            acquired = False
        except KazooException as error:
            msg = f"ZooKeeper {self.zk.description}: lock {self.path} failed: {error!r}"
            raise CoordinationError(msg) from error
        if not acquired:
            holders = ", ".join(str(c) for c in self._contenders()) or "unknown"
            msg = f"lock {self.path} not acquired within {wait:g} s (held by {holders})"
            raise CoordinationError(msg)

    def _contenders(self) -> list[object]:
        try:
            return list(self._lock.contenders())[:1]
        except KazooException:
            return []

    def release(self) -> None:
        try:
            self._lock.release()
        except KazooException as error:
            msg = f"ZooKeeper {self.zk.description}: releasing lock {self.path} failed: {error!r}"
            raise CoordinationError(msg) from error
