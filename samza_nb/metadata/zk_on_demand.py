"""A ZooKeeper session that a store gives up once its job has ended and opens again on use.

A job's handle keeps its metadata store for what it shows after the run (status, metrics,
outputs). Kept open, each ended job of a notebook kernel would hold a ZooKeeper session, and
its connection, for as long as the kernel lives: ZooKeeper refuses a client address more than
``maxClientCnxns`` (60 by default) connections. So the job releases the session when its last
processor stops (:meth:`OnDemandSession.release`); a later read opens a new one, which ends
again once no call used it for ``idle_s`` seconds.

A store that shares another owner's client (the coordinator's) never releases it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from samza_nb.errors import MetadataStoreError
from samza_nb.metadata.zk_client import ZkClient

__all__ = ["OnDemandSession"]

#: How long a session opened again after the release stays open without calls.
IDLE_S = 2.0


class OnDemandSession:
    """``client`` now; after :meth:`release`, a new client from ``reopen`` for each spell of use
    (``reopen=None``: a shared client, never released)."""

    def __init__(self, client: ZkClient, reopen: Callable[[], ZkClient] | None, *, idle_s: float = IDLE_S) -> None:
        self._client: ZkClient | None = client
        self._reopen = reopen
        self.idle_s = idle_s
        self.description = client.description
        self._lock = threading.Lock()
        self._busy = 0
        self._last_use = time.monotonic()
        self._released = False
        self._closed = False

    @property
    def client(self) -> ZkClient:
        """The open client (the last one, closed, once the session is closed for good)."""
        client = self._client
        if client is None:
            why = "closed" if self._closed else "released"
            msg = f"ZooKeeper {self.description}: the store's session was {why}"
            raise MetadataStoreError(msg)
        return client

    @contextlib.contextmanager
    def use(self) -> Iterator[ZkClient]:
        """The client for one call, opened again when the session was released."""
        with self._lock:
            if self._client is None and not self._closed and self._reopen is not None:
                self._client = self._reopen()
                self._watch_idle()
            client = self.client
            self._busy += 1
        try:
            yield client
        finally:
            with self._lock:
                self._busy -= 1
                self._last_use = time.monotonic()

    def release(self) -> None:
        """End the session now (once the calls in flight returned); later calls open a new one,
        which ends after ``idle_s`` seconds without calls. Idempotent; a no-op for a shared
        client."""
        if self._reopen is None:
            return
        with self._lock:
            if self._released or self._closed:
                return
            self._released = True
            if self._busy:
                self._watch_idle(after_s=0.0)
                return
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def close(self) -> None:
        """End the session for good (a shared client is its owner's to close)."""
        if self._reopen is None:
            return
        with self._lock:
            self._closed = True
            client = self._client
        if client is not None:
            client.close()

    def _watch_idle(self, after_s: float | None = None) -> None:
        """A daemon thread that closes the current client once no call used it for ``after_s``
        (default ``idle_s``) seconds. Called under the lock."""
        watched = self._client

        def watch() -> None:
            while True:
                with self._lock:
                    if self._client is not watched or self._closed:
                        return
                    idle_s = self.idle_s if after_s is None else after_s
                    quiet = time.monotonic() - self._last_use
                    if not self._busy and quiet >= idle_s:
                        self._client = None
                        break
                time.sleep(max(0.05, idle_s - quiet))
            if watched is not None:
                watched.close()

        threading.Thread(target=watch, name="zk-store-idle-close", daemon=True).start()
