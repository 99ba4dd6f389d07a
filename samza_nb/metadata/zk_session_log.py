"""The log lines of a ZooKeeper session: kazoo's reconnect chatter made one status line per
outage, and each distinct line let through once a minute.

Every :class:`~samza_nb.metadata.zk_client.ZkClient` hands kazoo a logger of its own
(:func:`session_logger`) whose records reach the handlers of ``samza_nb.zookeeper``.
"""

from __future__ import annotations

import logging
import threading
import time

from kazoo.protocol.states import KazooState

__all__ = ["ConnectionStatus", "session_logger", "zookeeper_log"]


class RepeatsQuieted(logging.Filter):
    """Lets each distinct kazoo message through once a minute: an unreachable server makes
    kazoo log "Connection dropped" at every reconnect try (several a second), which would
    flood a notebook cell or a processor's log while the bounded calls are still trying."""

    def __init__(self, every: float = 60.0) -> None:
        super().__init__()
        self.every = every
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        now = time.monotonic()
        with self._lock:
            if len(self._last) > 1_000:
                self._last.clear()
            last = self._last.get(text)
            if last is not None and now - last < self.every:
                return False
            self._last[text] = now
            return True


#: The logger of every ZkClient's kazoo session (kazoo's own, ``kazoo.client``, is left alone).
zookeeper_log = logging.getLogger("samza_nb.zookeeper")
_repeats_quieted = RepeatsQuieted()
zookeeper_log.addFilter(_repeats_quieted)

#: kazoo's lines while it gets a lost connection back (several a second while a server is away).
_RECONNECTING = (
    "Connection dropped",
    "Connection time-out",
    "Transition to CONNECTING",
    "Failed connecting to Zookeeper",
    "Zookeeper connection lost",
)


#: kazoo's line when the server says the session is gone (the connection was away too long).
_EXPIRED = "Session has expired"


class ConnectionStatus(logging.Filter):
    """One status line per outage of one session, instead of kazoo's lines while it
    reconnects: the address and how long the session outlives the connection. Before the
    session's first connection kazoo's lines are dropped (the start's error says it all);
    once connected again, an INFO line says after how long. kazoo's bare "Session has expired"
    becomes a line naming the server and what follows: a new session (the processor
    registers again and the job's model is recomputed without losing committed work)."""

    def __init__(self, description: str, session_timeout: float) -> None:
        super().__init__()
        self.description = description
        self.session_timeout = session_timeout
        self._connected_once = False
        self._lost_at: float | None = None
        self._lock = threading.Lock()

    def on_state(self, state: str) -> None:
        """A kazoo connection listener: a connection (again) ends the outage."""
        if state != KazooState.CONNECTED:
            return
        with self._lock:
            lost_at, self._lost_at = self._lost_at, None
            self._connected_once = True
        if lost_at is not None:
            zookeeper_log.info(
                "ZooKeeper %s: connected again after %.1f s", self.description, time.monotonic() - lost_at
            )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message == _EXPIRED:
            record.msg = (
                "ZooKeeper %s: the session expired (the connection was away longer than the "
                "session timeout, %g s); connecting with a new session"
            )
            record.args = (self.description, self.session_timeout)
            return True
        if not message.startswith(_RECONNECTING):
            return True
        with self._lock:
            if not self._connected_once or self._lost_at is not None:
                return False
            self._lost_at = time.monotonic()
        record.msg = (
            "ZooKeeper %s: connection lost; waiting up to %g s (the session timeout) for it to "
            "come back"
        )
        record.args = (self.description, self.session_timeout)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def session_logger(status: ConnectionStatus) -> logging.Logger:
    """A logger of one session's own (not registered: it goes with its client), whose records
    reach the handlers of ``samza_nb.zookeeper``; ancestors' filters do not apply to them, so
    it carries the repeat filter too."""
    logger = logging.Logger(zookeeper_log.name)
    logger.parent = zookeeper_log
    logger.addFilter(status)
    logger.addFilter(_repeats_quieted)
    return logger
