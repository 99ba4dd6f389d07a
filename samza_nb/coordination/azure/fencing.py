"""A processor's fencing lease and token on Azure.

Each processor holds an infinite lease on its blob ``processors/<pid>`` in the coordination
container; the lease's id is also its *fencing token*, registered in the job's metadata store
(:class:`~samza_nb.metadata.azure.AzureBlobMetadataStore`), where every fenced commit of the
processor checks it in the same conditional write as its entries. The leader fences a dropped
processor out by breaking the lease and revoking the token (``leadership``).

The lease also decides who owns a processor id: a process that starts under an id another one
heartbeats under waits for it to leave or go stale (:meth:`ProcessorFence.wait_out_predecessor`),
and one whose lease another incarnation took is taken over (:meth:`ProcessorFence.taken_over_by`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from samza_nb.coordination.azure.names import AzureNames
from samza_nb.errors import CoordinationError, JobLeaseError
from samza_nb.metadata.azure import AzureBlobMetadataStore, AzureWriteGuard
from samza_nb.metadata.azure_storage import describe_error

if TYPE_CHECKING:
    from samza_nb.coordination.azure.processors import ProcessorRow
    from samza_nb.coordination.azure.state import AzureState

__all__ = ["ProcessorFence", "fence_lease_renewed", "keep_fence_registered", "take_fence_lease"]

_log = logging.getLogger(__name__)


def take_fence_lease(blob: Any, store: AzureBlobMetadataStore | None, processor_id: str, where: str) -> str:
    """An infinite lease on ``blob`` (a previous holder of this id loses it), registered in
    ``store`` as the processor's fencing token; ``where`` names the coordinator in messages."""
    from azure.core.exceptions import AzureError

    try:
        try:
            blob.upload_blob(b"", overwrite=False)
        except AzureError as error:
            if getattr(error, "status_code", None) not in (409, 412):
                raise
        lease = _break_and_acquire(blob)
    except AzureError as error:
        msg = f"{where}: cannot take the fencing lease {blob.blob_name}: {describe_error(error)}"
        raise CoordinationError(msg) from error
    if store is not None:
        store.register_fence(processor_id, lease)
    return lease


#: Break-then-acquire rounds before giving up: another process of this id may acquire between
#: the two (it re-took a lease it found broken); the later starter breaks it again and wins.
_TAKE_ATTEMPTS = 5
_TAKE_BACKOFF_S = 0.05


def _break_and_acquire(blob: Any) -> str:
    """Break whatever lease ``blob`` holds and acquire an infinite one, again when another
    process acquired in between (409 LeaseAlreadyPresent), at most :data:`_TAKE_ATTEMPTS` times."""
    from azure.core.exceptions import AzureError
    from azure.storage.blob import BlobLeaseClient

    attempt = 1
    while True:
        try:
            BlobLeaseClient(blob).break_lease(lease_break_period=0)
        except AzureError as error:
            if getattr(error, "status_code", None) != 409:  # 409: no lease to break
                raise
        try:
            return str(blob.acquire_lease(lease_duration=-1).id)
        except AzureError as error:
            if getattr(error, "status_code", None) != 409 or attempt == _TAKE_ATTEMPTS:
                raise
        _log.info("%s: acquired by another process between break and acquire; again", blob.blob_name)
        time.sleep(_TAKE_BACKOFF_S * attempt)
        attempt += 1


def fence_lease_renewed(blob: Any, lease: str | None) -> bool:
    """Renew the fencing lease ``lease`` on ``blob``; False when it is gone (the leader broke
    it, or another incarnation took it). Other storage errors raise."""
    from azure.core.exceptions import AzureError
    from azure.storage.blob import BlobLeaseClient

    try:
        BlobLeaseClient(blob, lease_id=lease).renew()
    except AzureError as error:
        if getattr(error, "status_code", None) not in (409, 412):
            raise
        return False
    return True


def keep_fence_registered(store: AzureBlobMetadataStore | None, processor_id: str, lease: str | None) -> None:
    """Register ``lease`` again as the processor's token when another one is registered while
    the processor holds the lease: two processes racing for one id both register, and the one
    that lost the lease may have registered last."""
    if store is not None and lease is not None and store.fence_token(processor_id) != lease:
        store.register_fence(processor_id, lease)


class ProcessorFence:
    """This processor's fencing lease on ``processors/<pid>``; ``where`` names the coordinator
    in messages."""

    def __init__(self, state: AzureState, where: Callable[[], str]) -> None:
        self._state = state
        self._where = where
        self.blob: Any = None  # set by :meth:`take`
        #: The lease id, which is also the fencing token (None: not held, or given up).
        self.lease: str | None = None
        #: Set by the heartbeat thread: the lease found broken while no other process holds
        #: this processor id (the protocol thread looks at why; a lease taken since replaces it).
        self.broken_lease: str | None = None

    def take(self) -> None:
        """Take the lease (a previous holder of this id loses it) and register its token."""
        state = self._state
        if self.blob is None:
            self.blob = state.container.get_blob_client(AzureNames.processor_blob(state.processor_id))
        self.lease = take_fence_lease(self.blob, state.fenced_store(), state.processor_id, self._where())

    def renewed(self) -> bool:
        return fence_lease_renewed(self.blob, self.lease)

    def keep_registered(self) -> None:
        keep_fence_registered(self._state.fenced_store(), self._state.processor_id, self.lease)

    def check(self, guard: AzureWriteGuard) -> None:
        """Ask a guarded ``AzureBlobMetadataStore.put_all`` to check this processor's fencing
        lease before writing: once the leader dropped this processor (it stopped heartbeating)
        and broke the lease, its commits raise :class:`~samza_nb.errors.JobLeaseError`."""
        state = self._state
        if state.stopped or self.lease is None:
            msg = f"processor {state.processor_id!r} has left {state.names.container}: its commits are fenced"
            raise JobLeaseError(msg)
        if not isinstance(guard, AzureWriteGuard):
            msg = (
                "the Azure coordinator fences writes of the Azure metadata store only "
                "(metadata.store.factory=azure)"
            )
            raise CoordinationError(msg)
        guard.require_token(state.processor_id, self.lease, f"processor {state.processor_id!r}")

    def give_up(self) -> None:
        """Release the lease (a graceful stop)."""
        from azure.storage.blob import BlobLeaseClient

        lease, self.lease = self.lease, None
        if lease is not None:
            BlobLeaseClient(self.blob, lease).release()

    # -- one process per processor id -------------------------------------------------------
    def others_rows(self) -> list[ProcessorRow]:
        """Fresh rows of this processor id written by another incarnation, newest first."""
        state = self._state
        rows = [row for row in state.table.rows(state.processor_id) if row.incarnation != state.incarnation]
        now = state.table.server_now() if rows else None
        rows = [row for row in rows if now is not None and row.age(now) <= state.timings.liveness]
        return sorted(rows, key=lambda row: row.timestamp, reverse=True)

    def wait_out_predecessor(self) -> None:
        """Before joining, while another process heartbeats under this processor id: wait until
        it leaves (a rolling restart: start the new process, then stop the old one) or its
        rows go stale (it died: as the leader would, after the liveness timeout). One that still
        heartbeats after twice the liveness timeout is a duplicate: the start fails, naming it
        (as on ZooKeeper)."""
        state = self._state
        liveness = state.timings.liveness
        others = self.others_rows()
        if not others:
            return
        _log.info(
            "processor %s: another process (on %s) heartbeats under this id; waiting for it to "
            "leave or go stale", state.processor_id, others[0].location_id or "unknown",
        )
        deadline = time.monotonic() + 2 * liveness
        while others:
            if time.monotonic() >= deadline:
                msg = (
                    f"Processor: {state.processor_id} is duplicate in the group {state.names.container} "
                    f"on {state.settings.account.description}: another process (on "
                    f"{others[0].location_id or 'unknown'}) has heartbeat under the same id for "
                    f"{2 * liveness:.0f} s. Registration failed; give every processor "
                    "its own processor.id."
                )
                raise CoordinationError(msg)
            time.sleep(min(1.0, state.timings.heartbeat / 2))
            others = self.others_rows()

    def taken_over_by(self) -> ProcessorRow | None:
        """The process that took this processor id over, if one did: this one's fencing lease
        is gone and another incarnation heartbeats under the id (it took the lease at its
        start, while this one was frozen or cut off). The lease decides, so of two processes
        racing for one id exactly the one holding it goes on. A lease the leader broke (it
        dropped this processor) with no other process behind it is not a take-over."""
        if self.lease is None:
            return None
        if self.renewed():
            self.keep_registered()
            return None
        others = self.others_rows()
        if others:
            return others[0]
        self.broken_lease = self.lease
        return None

