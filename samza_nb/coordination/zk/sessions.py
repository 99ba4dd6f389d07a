"""ZooKeeper sessions of a processor (SAMZA.md §8.5 step 10).

A lost session voids the reactions scheduled for it, stops this processor's work and, once
connected again, registers the processor anew and runs for leader; a session that survived a
lost connection runs the election again (its one-shot watch went with the connection); a
connection suspended for longer than the session timeout stops the coordinator.
"""

from __future__ import annotations

import logging
import threading

from kazoo.protocol.states import KazooState

from samza_nb.coordination.zk._base import ZkCoordinatorBase
from samza_nb.errors import CoordinationError

__all__ = ["ZkSessions"]

_log = logging.getLogger(__name__)


class ZkSessions(ZkCoordinatorBase):
    """Reactions to the session's state."""

    # -- sessions (§8.5 step 10) ---------------------------------------------------------------
    def _on_session_state(self, state: str) -> None:
        # Called on kazoo's thread: only schedule.
        if state == KazooState.LOST:
            self._epoch += 1  # reactions already scheduled for the old session are void
            self._session_lost = True
            self._schedule("session-expired", 0, self._on_session_expired)
        elif state == KazooState.SUSPENDED:
            # A timer of its own: the scheduler thread may be blocked on the dead connection.
            with self._changed:
                if self._disconnect_timer is None and not self._stopped:
                    timer = threading.Timer(self.session_timeout, self._on_disconnected_too_long)
                    timer.daemon = True
                    timer.start()
                    self._disconnect_timer = timer
        elif state == KazooState.CONNECTED:
            self._cancel_disconnect_timer()
            if self._session_lost:
                self._schedule("new-session", 0, self._on_new_session)
            else:
                # The same session on a new connection (a server restarted, a link came
                # back): ZooKeeper keeps watches per connection and kazoo does not set them
                # again, so a one-shot watch (this follower's on its predecessor) is gone.
                # Elect again: it watches the predecessor anew, or leads if that one left
                # meanwhile. (kazoo's DataWatch and ChildrenWatch set their own again.)
                epoch = self._epoch
                self._schedule("elect", 0, lambda: self._elect() if epoch == self._epoch else None)

    def _cancel_disconnect_timer(self) -> None:
        with self._changed:
            timer, self._disconnect_timer = self._disconnect_timer, None
        if timer is not None:
            timer.cancel()

    def _on_disconnected_too_long(self) -> None:
        with self._changed:
            self._disconnect_timer = None
        msg = (
            f"processor {self.processor_id!r} was disconnected from ZooKeeper "
            f"{self._zk.description if self._zk else ''} for more than the session timeout "
            f"({self.session_timeout:g} s)"
        )
        self._stop(CoordinationError(msg))

    def _on_session_expired(self) -> None:
        self._node = None
        self._leading = False
        if self._elector is not None:
            self._elector.resign()
        self._monitor = None
        if self._scheduler is not None:
            self._scheduler.cancel_all()
        if self._working and not self._expired:
            self._listener().on_job_model_expired()
        self._working = False
        self._expired = True
        if self._zk is not None and self._zk.kazoo.connected:
            self._on_new_session()

    def _on_new_session(self) -> None:
        if not self._session_lost or self._zk is None:
            return
        self._session_lost = False
        if self._scheduler is not None:
            self._scheduler.cancel_all()
        pid = self.processor_id
        self._node = self._registry.register(pid, self._locations[pid])
        self._registry.wait_until_unique(self._node, pid, 2 * self.session_timeout)
        _log.info("processor %s rejoined %s with a new session", pid, self.keys.root)
        self._elect()
