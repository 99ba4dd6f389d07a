"""The barrier of one job-model version: NEW → DONE or TIMED_OUT (SAMZA.md §8.5 steps 6–8).

The leader creates ``barrier_<version>`` with the expected participants (kept in the node's
data so any reader can see them) and state ``NEW``. Each processor joins by creating
``barrier_participants/<processorId>``. When exactly the expected processors joined, the state
becomes ``DONE``; the leader's timer turns a still-``NEW`` barrier into ``TIMED_OUT``. Both
transitions are compare-and-set from ``NEW``, so neither overwrites the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection

from kazoo.exceptions import BadVersionError, NodeExistsError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zk_client import ZkClient

__all__ = ["DONE", "NEW", "TIMED_OUT", "VersionBarrier"]

NEW = "NEW"
DONE = "DONE"
TIMED_OUT = "TIMED_OUT"
_PREFIX = "barrier_"


class VersionBarrier:
    """Barriers of one coordination tree, one per job-model version."""

    def __init__(self, zk: ZkClient, keys: ZkKeyBuilder) -> None:
        self.zk = zk
        self.keys = keys

    def create(self, version: str, participants: Collection[str]) -> None:
        expected = json.dumps(sorted(participants)).encode()
        self.zk.ensure(self.keys.barriers)
        self.zk.commit(
            f"create barrier {version}",
            lambda tx: (
                tx.create(self.keys.barrier(version), expected),
                tx.create(self.keys.barrier_state(version), NEW.encode()),
                tx.create(self.keys.barrier_participants(version), b""),
            ),
        )

    def expected(self, version: str) -> list[str]:
        found = self.zk.get(self.keys.barrier(version))
        return list(json.loads(found[0])) if found and found[0] else []

    def join(self, version: str, processor_id: str) -> None:
        try:
            self.zk.create(f"{self.keys.barrier_participants(version)}/{processor_id}")
        except NodeExistsError:
            pass

    def participants(self, version: str) -> list[str]:
        return sorted(self.zk.children(self.keys.barrier_participants(version)) or [])

    def state(self, version: str) -> str | None:
        found = self.zk.get(self.keys.barrier_state(version))
        return found[0].decode() if found else None

    def _transition(self, version: str, target: str) -> str:
        """Set ``target`` if the state is NEW; returns the state after the attempt."""
        path = self.keys.barrier_state(version)
        for _ in range(10):
            found = self.zk.get(path)
            if found is None:
                msg = f"barrier {version} does not exist ({path})"
                raise CoordinationError(msg)
            state = found[0].decode()
            if state != NEW:
                return state
            try:
                self.zk.set(path, target.encode(), version=found[1].version)
                return target
            except BadVersionError:
                continue
        msg = f"barrier {version} ({path}) kept changing"
        raise CoordinationError(msg)

    def try_complete(self, version: str) -> str:
        """DONE when the participants are exactly the expected ones and the state is NEW."""
        expected = self.expected(version)
        joined = self.participants(version)
        if len(joined) == len(expected) and set(expected) <= set(joined):
            return self._transition(version, DONE)
        return self.state(version) or NEW

    def expire(self, version: str) -> str:
        """TIMED_OUT if still NEW; returns the resulting state."""
        return self._transition(version, TIMED_OUT)

    def watch_state(self, version: str, callback: Callable[[str], None]) -> None:
        """Call ``callback(state)`` (on kazoo's thread) once the state is DONE or TIMED_OUT."""

        def changed(data: bytes | None, stat: object) -> bool:
            if stat is None:
                return False  # the barrier was cleaned up: nothing more to wait for
            state = data.decode() if data else None
            if state in (DONE, TIMED_OUT):
                callback(state)
                return False
            return True

        DataWatch(self.zk.kazoo, self.keys.barrier_state(version), changed)

    def watch_participants(self, version: str, callback: Callable[[], bool]) -> None:
        """Call ``callback()`` on every participant change until it returns False."""

        def changed(children: list[str]) -> bool:
            return callback()

        ChildrenWatch(self.zk.kazoo, self.keys.barrier_participants(version), changed)

    def cleanup(self, keep: int) -> list[str]:
        """Delete all but the ``keep`` newest barriers; returns the deleted versions."""
        names = self.zk.children(self.keys.barriers) or []
        numbers = sorted(
            int(n[len(_PREFIX) :]) for n in names if n.startswith(_PREFIX) and n[len(_PREFIX) :].isdigit()
        )
        doomed = [str(n) for n in numbers[: max(0, len(numbers) - keep)]]
        for version in doomed:
            self.zk.delete_tree(self.keys.barrier(version))
        return doomed
