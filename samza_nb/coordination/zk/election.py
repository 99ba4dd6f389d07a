"""Leader election by watching the predecessor (SAMZA.md §8.4, Samza's ZkLeaderElector).

The processor whose node is first in sequence order leads. Every other one watches only its
immediate predecessor, so a departure wakes one processor, not the whole group. A predecessor
already gone means the list changed under us: wait a random 0–1 s and look again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from kazoo.protocol.states import EventType, WatchedEvent

from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zk_client import ZkClient

__all__ = ["LeaderElector"]

_MAX_ROUNDS = 50


class LeaderElector:
    """Elects among the nodes of ``processors/``.

    ``on_predecessor_change`` is called (on kazoo's event thread: schedule, do not block) when
    the watched predecessor changes or goes away; the caller then runs
    :meth:`try_become_leader` again.
    """

    def __init__(
        self, zk: ZkClient, keys: ZkKeyBuilder, on_predecessor_change: Callable[[], None]
    ) -> None:
        self.zk = zk
        self.keys = keys
        self._on_change = on_predecessor_change
        self.is_leader = False
        self.watching: str | None = None

    def try_become_leader(self, node: str) -> bool:
        """Whether ``node`` leads now; if not, a watch is set on its predecessor."""
        for _ in range(_MAX_ROUNDS):
            nodes = sorted(self.zk.children(self.keys.processors) or [])
            if node not in nodes:
                # The session that made the node ended; the coordinator registers again with
                # the new session and elects then.
                self.is_leader = False
                return False
            index = nodes.index(node)
            if index == 0:
                self.is_leader = True
                self.watching = None
                return True
            predecessor = nodes[index - 1]
            if self.zk.exists(self.keys.processor(predecessor), watch=self._watch) is not None:
                self.watching = predecessor
                return False
            time.sleep(random.uniform(0.0, 1.0))
        msg = f"leader election under {self.keys.processors} did not settle after {_MAX_ROUNDS} rounds"
        raise CoordinationError(msg)

    def resign(self) -> None:
        """Stop acting as the leader (the node stays until the session ends)."""
        self.is_leader = False

    def _watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:  # session events are the coordinator's business
            self._on_change()
