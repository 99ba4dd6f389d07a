"""A processor's fencing lease and token on Azure.

Each processor holds an infinite lease on its blob ``processors/<pid>`` in the coordination
container; the lease's id is also its *fencing token*, registered in the job's metadata store
(:class:`~samza_nb.metadata.azure.AzureBlobMetadataStore`), where every fenced commit of the
processor checks it in the same conditional write as its entries. The leader fences a dropped
processor out by breaking the lease and revoking the token (``leadership``).
"""

from __future__ import annotations

from typing import Any

from samza_nb.errors import CoordinationError
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import describe_error

__all__ = ["fence_lease_renewed", "keep_fence_registered", "take_fence_lease"]


def take_fence_lease(blob: Any, store: AzureBlobMetadataStore | None, processor_id: str, where: str) -> str:
    """An infinite lease on ``blob`` (a previous holder of this id loses it), registered in
    ``store`` as the processor's fencing token; ``where`` names the coordinator in messages."""
    from azure.core.exceptions import AzureError
    from azure.storage.blob import BlobLeaseClient

    try:
        try:
            blob.upload_blob(b"", overwrite=False)
        except AzureError as error:
            if getattr(error, "status_code", None) not in (409, 412):
                raise
        try:
            BlobLeaseClient(blob).break_lease(lease_break_period=0)
        except AzureError as error:
            if getattr(error, "status_code", None) != 409:  # 409: no lease to break
                raise
        lease = str(blob.acquire_lease(lease_duration=-1).id)
    except AzureError as error:
        msg = f"{where}: cannot take the fencing lease {blob.blob_name}: {describe_error(error)}"
        raise CoordinationError(msg) from error
    if store is not None:
        store.register_fence(processor_id, lease)
    return lease


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
