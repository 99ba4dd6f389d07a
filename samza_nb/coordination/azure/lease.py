"""AzureJobLease: the job lease as a blob lease, its generation in the same blob.

The blob is the Azure metadata store's key :data:`GENERATION_KEY` (its content: the generation's
decimal digits; its metadata: who holds it). ``acquire`` takes a lease on it and, under that
lease, bumps the generation, so the generation is taken only together with the lease. A thread
renews the lease; a holder that dies (or is frozen) loses it once the lease duration passes.

A commit written as ``store.put_all(entries, fence=lease.fence)`` reads the blob *with this
lease id* first: Azure refuses that read once the lease was lost or taken by another
incarnation, and the store refuses a generation that is not this one's, so nothing is written.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from typing import Any

from samza_nb.coordination.lease import JobLease
from samza_nb.errors import JobLeaseError, MetadataStoreError
from samza_nb.metadata.azure import AzureBlobMetadataStore, ConditionFailed
from samza_nb.metadata.azure_storage import describe_error
from samza_nb.metadata.base import Fence, generation_of, namespaced_key

__all__ = ["GENERATION_KEY", "AzureJobLease"]

#: The metadata-store key of the lease blob (the same key the embedded lease uses).
GENERATION_KEY = namespaced_key("job-lease", "generation")
_POLL_SECONDS = 0.2


class AzureJobLease(JobLease):
    """The lease of the job whose Azure metadata store is ``store``.

    ``duration``: the blob lease in seconds (Azure allows 15–60); ``holder``: describes this
    incarnation (default ``pid <n> on <host>``).
    """

    def __init__(
        self, store: AzureBlobMetadataStore, *, duration: float = 60.0, holder: str | None = None
    ) -> None:
        self.store = store
        self.duration = duration
        self.holder_name = holder or f"pid {os.getpid()} on {socket.gethostname()}"
        self.blob = store.blob(GENERATION_KEY)
        self._generation = 0
        self._lease: Any = None
        self._lost: str | None = None
        self._stop = threading.Event()

    def __repr__(self) -> str:
        return f"AzureJobLease({self.store.container!r}, generation={self._generation})"

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def fence(self) -> Fence:
        """``(GENERATION_KEY, generation)``: pass it to ``put_all(..., fence=)`` to commit."""
        return GENERATION_KEY, self._generation

    def holder(self) -> str | None:
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        try:
            properties = self.blob.get_blob_properties()
        except ResourceNotFoundError:
            return None
        except AzureError as error:
            msg = f"{self!r}: cannot read the holder: {describe_error(error)}"
            raise JobLeaseError(msg) from error
        if properties.lease.state != "leased":
            return None
        return str(properties.metadata.get("holder") or "another incarnation")

    def acquire(self, *, wait: bool = False, timeout: float | None = None) -> int:
        from azure.core.exceptions import AzureError

        if self._lease is not None:
            msg = f"{self!r} is already held by this incarnation; release it first"
            raise JobLeaseError(msg, holder=self.holder_name)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.store.put_if(GENERATION_KEY, b"0", None)
        except ConditionFailed:
            pass  # it exists
        except MetadataStoreError as error:
            msg = f"{self!r}: cannot create the lease blob: {error}"
            raise JobLeaseError(msg) from error
        while True:
            try:
                lease = self.blob.acquire_lease(lease_duration=int(self.duration))
                break
            except AzureError as error:
                if getattr(error, "status_code", None) != 409:
                    msg = f"{self!r}: cannot take the lease: {describe_error(error)}"
                    raise JobLeaseError(msg) from error
            holder = self.holder()
            if not wait or (deadline is not None and time.monotonic() >= deadline):
                msg = (
                    f"the job lease {self.store.container}/{self.blob.blob_name} is held by "
                    f"{holder or 'another incarnation'}"
                )
                raise JobLeaseError(msg, holder=holder)
            time.sleep(_POLL_SECONDS)
        try:
            stored, etag = self.store.read(GENERATION_KEY)
            generation = generation_of(stored, repr(self.store)) + 1
            self.store.put_if(GENERATION_KEY, str(generation).encode(), etag, lease=lease.id)
            self.blob.set_blob_metadata({"holder": _ascii(self.holder_name)}, lease=lease.id)
        except (AzureError, MetadataStoreError) as error:
            lease.release()
            msg = f"{self!r}: cannot record the new generation: {error}"
            raise JobLeaseError(msg) from error
        self._lease, self._generation, self._lost = lease, generation, None
        self.store.hold_fence_lease(GENERATION_KEY, lease.id)
        self._stop = threading.Event()
        threading.Thread(
            target=self._renew,
            args=(lease, self._stop),
            name="samza_nb-azure-job-lease",
            daemon=True,
        ).start()
        return generation

    def _renew(self, lease: Any, stop: threading.Event) -> None:
        while not stop.wait(self.duration / 3):
            try:
                lease.renew()
            except Exception as error:  # noqa: BLE001 - recorded; check() reports it
                self._lost = describe_error(error)
                return

    def release(self) -> None:
        self._stop.set()
        lease, self._lease = self._lease, None
        if lease is None:
            return
        self.store.hold_fence_lease(GENERATION_KEY, None)
        try:
            lease.release()
        except Exception:  # noqa: BLE001 - a lost lease needs no release
            pass

    def check(self) -> None:
        from azure.core.exceptions import AzureError

        if self._generation == 0:
            msg = f"the job lease of {self.store.container} was never acquired by this incarnation"
            raise JobLeaseError(msg)
        lease = self._lease
        if lease is None or self._lost is not None:
            holder = self.holder()
            msg = (
                f"this incarnation (generation {self._generation}) no longer holds the job lease "
                f"of {self.store.container}"
                + (f" ({self._lost})" if self._lost else "")
                + (f"; now held by {holder}" if holder else "")
            )
            raise JobLeaseError(msg, holder=holder)
        try:
            stored = self.blob.download_blob(lease=lease.id).readall()
        except AzureError as error:
            holder = self.holder()
            msg = (
                f"this incarnation (generation {self._generation}) lost the job lease of "
                f"{self.store.container}: {describe_error(error)}"
            )
            raise JobLeaseError(msg, holder=holder) from error
        current = generation_of(stored, repr(self.store))
        if current != self._generation:
            msg = (
                f"this incarnation (generation {self._generation}) is fenced: the job lease "
                f"generation is now {current}"
            )
            raise JobLeaseError(msg)


def _ascii(text: str) -> str:
    """Blob metadata values are ASCII."""
    return re.sub(r"[^\x20-\x7e]", "?", text)
