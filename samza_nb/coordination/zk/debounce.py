"""The debounce scheduler: one thread runs every coordinator reaction (SAMZA.md §8.3).

Actions are keyed by name; scheduling a name again replaces its pending run, so a burst of
membership changes within the delay collapses into one run after the last. A failing action
is reported to ``on_error`` (the coordinator then stops). After :meth:`stop`, nothing new runs.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["DebounceScheduler"]

_log = logging.getLogger(__name__)


class DebounceScheduler:
    """Runs named actions after a delay on one daemon thread called ``name``."""

    def __init__(self, name: str, on_error: Callable[[str, BaseException], None]) -> None:
        self._on_error = on_error
        self._pending: dict[str, tuple[float, int, Callable[[], None]]] = {}
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"DebounceScheduler({self._thread.name!r}, pending={sorted(self._pending)})"

    @property
    def in_scheduler_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def schedule(self, name: str, delay: float, action: Callable[[], None]) -> None:
        """Run ``action`` after ``delay`` seconds, replacing a pending run of ``name``."""
        with self._cond:
            if self._stopped:
                return
            self._pending[name] = (time.monotonic() + max(0.0, delay), next(self._order), action)
            self._cond.notify_all()

    def cancel(self, name: str) -> None:
        with self._cond:
            self._pending.pop(name, None)

    def cancel_all(self) -> None:
        with self._cond:
            self._pending.clear()

    def pending(self) -> list[str]:
        with self._cond:
            return sorted(self._pending)

    def stop(self, timeout: float = 10.0) -> None:
        """Drop pending actions and end the thread (waits up to ``timeout`` for a running
        action, unless called from the thread itself)."""
        with self._cond:
            self._stopped = True
            self._pending.clear()
            self._cond.notify_all()
        self.join(timeout)

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the thread to end (not from the thread itself)."""
        if not self.in_scheduler_thread and timeout > 0:
            self._thread.join(timeout)

    def _next(self) -> tuple[str, Callable[[], None]] | None:
        with self._cond:
            while not self._stopped:
                if not self._pending:
                    self._cond.wait()
                    continue
                name, (due, _, action) = min(self._pending.items(), key=lambda item: item[1][:2])
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                del self._pending[name]
                return name, action
            return None

    def _loop(self) -> None:
        while (item := self._next()) is not None:
            name, action = item
            try:
                action()
            except BaseException as error:  # noqa: BLE001 - every failure stops the coordinator
                _log.warning("coordinator action %r failed: %s", name, error, exc_info=True)
                try:
                    self._on_error(name, error)
                except Exception:  # noqa: BLE001 - the error handler must not kill the thread
                    _log.exception("stopping after the failure of %r failed", name)
