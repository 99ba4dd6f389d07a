"""ZooKeeper sessions of a processor (SAMZA.md §8.5 step 10).

A lost session voids the reactions scheduled for it, stops this processor's work and, once
connected again, registers the processor anew and runs for leader; a session that survived a
lost connection runs the election again (its one-shot watch went with the connection); a
connection suspended for longer than the session timeout stops the coordinator.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.protocol.states import KazooState

from samza_nb.coordination.zk.agreement import ZkAgreement
from samza_nb.coordination.zk.leadership import ZkLeadership
from samza_nb.coordination.zk.state import ZkState
from samza_nb.errors import CoordinationError

__all__ = ["ZkSessions"]

_log = logging.getLogger(__name__)


class ZkSessions:
    """Reactions to the session's state; ``stop`` stops the coordinator with an error."""

    def __init__(
        self,
        state: ZkState,
        leadership: ZkLeadership,
        agreement: ZkAgreement,
        stop: Callable[[BaseException], None],
    ) -> None:
        self._state = state
        self._leadership = leadership
        self._agreement = agreement
        self._stop = stop
        self._session_lost = False
        self._disconnect_timer: threading.Timer | None = None

    # -- sessions (§8.5 step 10) ---------------------------------------------------------------
    def on_session_state(self, kazoo_state: str) -> None:
        # Called on kazoo's thread: only schedule.
        state = self._state
        if kazoo_state == KazooState.LOST:
            state.epoch += 1  # reactions already scheduled for the old session are void
            self._session_lost = True
            state.schedule("session-expired", 0, self._on_session_expired)
        elif kazoo_state == KazooState.SUSPENDED:
            # A timer of its own: the scheduler thread may be blocked on the dead connection.
            with state.changed:
                if self._disconnect_timer is None and not state.stopped:
                    timer = threading.Timer(state.settings.session_timeout, self._on_disconnected_too_long)
                    timer.daemon = True
                    timer.start()
                    self._disconnect_timer = timer
        elif kazoo_state == KazooState.CONNECTED:
            self.cancel_disconnect_timer()
            if self._session_lost:
                state.schedule("new-session", 0, self._on_new_session)
            else:
                # The same session on a new connection (a server restarted, a link came
                # back): ZooKeeper keeps watches per connection and kazoo does not set them
                # again, so a one-shot watch (this follower's on its predecessor) is gone.
                # Elect again: it watches the predecessor anew, or leads if that one left
                # meanwhile. (kazoo's DataWatch and ChildrenWatch set their own again.)
                state.schedule("elect", 0, state.in_session(state.epoch, self._leadership.elect))

    def cancel_disconnect_timer(self) -> None:
        with self._state.changed:
            timer, self._disconnect_timer = self._disconnect_timer, None
        if timer is not None:
            timer.cancel()

    def _on_disconnected_too_long(self) -> None:
        state = self._state
        with state.changed:
            self._disconnect_timer = None
        msg = (
            f"processor {state.processor_id!r} was disconnected from ZooKeeper "
            f"{state.zk.description if state.zk else ''} for more than the session timeout "
            f"({state.settings.session_timeout:g} s)"
        )
        self._stop(CoordinationError(msg))

    def _on_session_expired(self) -> None:
        state = self._state
        state.node = None
        self._leadership.resign()
        if state.scheduler is not None:
            state.scheduler.cancel_all()
        self._agreement.expire_work()
        if state.zk is not None and state.zk.kazoo.connected:
            self._on_new_session()

    def _on_new_session(self) -> None:
        state = self._state
        if not self._session_lost or state.zk is None:
            return
        self._session_lost = False
        if state.scheduler is not None:
            state.scheduler.cancel_all()
        pid = state.processor_id
        state.node = state.registry.register(pid, state.location)
        state.registry.wait_until_unique(state.node, pid, 2 * state.settings.session_timeout)
        _log.info("processor %s rejoined %s with a new session", pid, state.keys.root)
        self._leadership.elect()
