"""AzureLock: a lock as a lease on a blob of its own (SAMZA.md §10.4, Samza's AzureLock).

Acquiring retries taking a lease on ``locks/<lock id>``, sleeping a random 0–1 s between
attempts, until the timeout. Samza's ``AzureCoordinationUtils.getLock`` throws instead of
returning one; this lock is usable: the run id is agreed under it and one processor creates
intermediate streams under it. While held, a thread renews the lease, so a holder may keep it
longer than the lease duration; a holder that dies frees it once the lease expires.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any

from samza_nb.coordination.azure.names import AzureNames
from samza_nb.coordination.lock import DistributedLock
from samza_nb.errors import CoordinationError
from samza_nb.metadata.azure_storage import describe_error

__all__ = ["AzureLock"]

_log = logging.getLogger(__name__)


class AzureLock(DistributedLock):
    """``with AzureLock(container, "run-id", timeout=30): …`` (``container``: a ContainerClient)."""

    def __init__(
        self,
        container: Any,
        lock_id: str,
        *,
        timeout: float = 30.0,
        lease_duration: float = 60.0,
        renew_every: float | None = None,
    ) -> None:
        self.blob = container.get_blob_client(AzureNames.lock_blob(lock_id))
        self.lock_id = lock_id
        self.timeout = timeout
        self.lease_duration = lease_duration
        #: Seconds between renewals (default a third of the lease duration).
        self.renew_every = renew_every if renew_every is not None else lease_duration / 3
        self._lease: Any = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        #: Why the renewing thread gave the lease up (None while it renews).
        self._lost: str | None = None

    def __repr__(self) -> str:
        return f"AzureLock({self.blob.blob_name!r}, held={self._lease is not None})"

    def _ensure_blob(self) -> None:
        from azure.core.exceptions import AzureError

        try:
            self.blob.upload_blob(b"", overwrite=False)
        except AzureError as error:
            if getattr(error, "status_code", None) not in (409, 412):
                msg = f"{self!r}: cannot create the lock blob: {describe_error(error)}"
                raise CoordinationError(msg) from error

    def acquire(self, timeout: float | None = None) -> None:
        """Block until held; CoordinationError after ``timeout`` seconds (default the lock's)."""
        from azure.core.exceptions import AzureError

        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        self._ensure_blob()
        while True:
            try:
                self._lease = self.blob.acquire_lease(lease_duration=int(self.lease_duration))
                break
            except AzureError as error:
                if getattr(error, "status_code", None) != 409:
                    msg = f"{self!r}: acquiring failed: {describe_error(error)}"
                    raise CoordinationError(msg) from error
            if time.monotonic() >= deadline:
                msg = (
                    f"lock {self.lock_id!r} ({self.blob.blob_name}) not acquired within {wait:g} s"
                )
                raise CoordinationError(msg)
            time.sleep(min(random.uniform(0.0, 1.0), max(0.0, deadline - time.monotonic())))
        self._stop.clear()
        self._renewer = threading.Thread(
            target=self._renew, name=f"samza_nb-azure-lock-{self.lock_id}", daemon=True
        )
        self._renewer.start()

    def _renew(self) -> None:
        """Renew every ``renew_every`` seconds; a failed renewal is retried (and logged)
        until the lease has run out since the last one that worked. Then the lock is lost:
        logged, and :meth:`release` raises saying why."""
        renewed = time.monotonic()
        while not self._stop.wait(self.renew_every):
            lease = self._lease
            if lease is None:
                return
            try:
                lease.renew()
                renewed = time.monotonic()
            except Exception as error:  # noqa: BLE001 - any failure: retried, then the lock is lost
                reason = describe_error(error)
                if time.monotonic() - renewed < self.lease_duration:
                    _log.warning("%r: renewing its lease failed, retrying: %s", self, reason)
                    continue
                self._lost = f"its lease was not renewed for {self.lease_duration:g} s: {reason}"
                _log.warning("%r: lost (%s)", self, self._lost)
                return

    def release(self) -> None:
        """Give the lock up (idempotent)."""
        self._stop.set()
        lease, self._lease = self._lease, None
        if lease is None:
            return
        from azure.core.exceptions import AzureError

        lost, self._lost = self._lost, None
        try:
            lease.release()
        except AzureError as error:
            why = lost or f"the lease was lost? {describe_error(error)}"
            msg = f"{self!r}: releasing failed ({why})"
            raise CoordinationError(msg) from error
        if lost is not None:
            msg = f"{self!r}: held past its lease ({lost}); another holder may have taken it meanwhile"
            raise CoordinationError(msg)
