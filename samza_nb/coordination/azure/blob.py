"""The coordination page blob: the leader's lease and what it publishes (SAMZA.md §10.3, §10.4).

==================== ===================================================================
byte range           content (JSON, zero-padded to the region)
==================== ===================================================================
[0, 1024000)         JobModelBundle: ``prev-job-model``, ``curr-job-model``,
                     ``prev-job-model-version``, ``curr-job-model-version``
[1024000, 1025024)   barrier state, the JSON string ``"<START|END|TIMEOUT> <version>"``
[1025024, 1026048)   JSON array of the live processor ids the leader published
==================== ===================================================================

The leader is whoever holds the blob's lease. Every write carries the leader's lease id, so
Azure refuses it once the lease was lost: a demoted leader can never publish. Reads need no
lease and raise :class:`~samza_nb.errors.CoordinationError` on storage errors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from samza_nb.errors import CoordinationError, ModelError
from samza_nb.metadata.azure_storage import describe_error
from samza_nb.model import JobModel

__all__ = [
    "BARRIER_END",
    "BARRIER_START",
    "BARRIER_TIMEOUT",
    "BUNDLE_BYTES",
    "CoordinationBlob",
    "JobModelBundle",
    "LeaseLost",
]

BUNDLE_OFFSET, BUNDLE_BYTES = 0, 1_024_000
BARRIER_OFFSET, BARRIER_BYTES = 1_024_000, 1024
PROCESSORS_OFFSET, PROCESSORS_BYTES = 1_025_024, 1024
BARRIER_START, BARRIER_END, BARRIER_TIMEOUT = "START", "END", "TIMEOUT"


class LeaseLost(CoordinationError):
    """A write conditioned on the leader's lease was refused: this processor no longer leads."""


@dataclass(frozen=True)
class JobModelBundle:
    """The previous and current job models and their versions (Samza's JobModelBundle)."""

    prev_model: JobModel | None
    curr_model: JobModel | None
    prev_version: str | None
    curr_version: str | None

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "prev-job-model": None if self.prev_model is None else self.prev_model.to_dict(),
                "curr-job-model": None if self.curr_model is None else self.curr_model.to_dict(),
                "prev-job-model-version": self.prev_version,
                "curr-job-model-version": self.curr_version,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> JobModelBundle:
        value = json.loads(raw)

        def model(field: str) -> JobModel | None:
            found = value.get(field)
            return None if found is None else JobModel.from_dict(found)

        def version(field: str) -> str | None:
            found = value.get(field)
            return None if found is None else str(found)

        return cls(
            model("prev-job-model"),
            model("curr-job-model"),
            version("prev-job-model-version"),
            version("curr-job-model-version"),
        )


class CoordinationBlob:
    """The page blob of one job (``blob``: a BlobClient), ``length`` bytes long."""

    def __init__(self, blob: Any, length: int = 5_120_000) -> None:
        if length % 512 or length < PROCESSORS_OFFSET + PROCESSORS_BYTES:
            msg = (
                f"job.coordinator.azure.blob.length must be a multiple of 512 of at least "
                f"{PROCESSORS_OFFSET + PROCESSORS_BYTES}, got {length}"
            )
            raise CoordinationError(msg)
        self.blob = blob
        self.length = length

    def __repr__(self) -> str:
        return f"CoordinationBlob({self.blob.container_name}/{self.blob.blob_name})"

    def _error(self, what: str, error: BaseException) -> CoordinationError:
        return CoordinationError(f"{self!r}: {what}: {describe_error(error)}")

    def exists(self) -> bool:
        """Whether the page blob exists (a job no processor has started yet has none)."""
        from azure.core.exceptions import AzureError

        try:
            return bool(self.blob.exists())
        except AzureError as error:
            what = "check that the page blob exists"
            raise self._error(what, error) from error

    def ensure(self) -> None:
        """Create the page blob unless it exists. Two processors creating it at once both
        create an empty blob; once one holds the lease (before anything is written) the
        other's create is refused, so a published model is never wiped."""
        from azure.core.exceptions import AzureError

        try:
            if not self.blob.exists():
                self.blob.create_page_blob(self.length)
        except AzureError as error:
            if getattr(error, "status_code", None) in (409, 412):
                return  # it exists and is leased
            what = "create the page blob"
            raise self._error(what, error) from error

    # -- the lease (leader election, §10.4) ----------------------------------------------------
    def acquire_lease(self, duration: float) -> str | None:
        """The new lease id, or None when another processor holds the lease (HTTP 409)."""
        from azure.core.exceptions import AzureError, ResourceExistsError

        try:
            lease = self.blob.acquire_lease(lease_duration=int(duration))
        except ResourceExistsError:
            return None
        except AzureError as error:
            if getattr(error, "status_code", None) == 409:
                return None
            what = "acquire the lease"
            raise self._error(what, error) from error
        return str(lease.id)

    def renew_lease(self, lease_id: str) -> None:
        """Renew; raises :class:`LeaseLost` when the lease is no longer this one."""
        from azure.core.exceptions import AzureError
        from azure.storage.blob import BlobLeaseClient

        try:
            BlobLeaseClient(self.blob, lease_id).renew()
        except AzureError as error:
            msg = f"{self!r}: renewing the leader's lease failed: {describe_error(error)}"
            raise LeaseLost(msg) from error

    def release_lease(self, lease_id: str) -> None:
        """Give the lease up (errors ignored: a lost lease needs no release)."""
        from azure.core.exceptions import AzureError
        from azure.storage.blob import BlobLeaseClient

        try:
            BlobLeaseClient(self.blob, lease_id).release()
        except AzureError:
            pass

    def lease_state(self) -> str:
        """``available``, ``leased``, ``expired``, ``breaking`` or ``broken``."""
        from azure.core.exceptions import AzureError

        try:
            return str(self.blob.get_blob_properties().lease.state)
        except AzureError as error:
            what = "read the lease state"
            raise self._error(what, error) from error

    # -- regions -------------------------------------------------------------------------------
    def _read(self, offset: int, size: int) -> bytes | None:
        from azure.core.exceptions import AzureError

        try:
            data = self.blob.download_blob(offset=offset, length=size).readall()
        except AzureError as error:
            what = f"read bytes {offset}..{offset + size}"
            raise self._error(what, error) from error
        data = data.rstrip(b"\x00")
        return data or None

    def _write(self, offset: int, size: int, value: Any, lease_id: str | None, what: str) -> None:
        from azure.core.exceptions import AzureError

        if lease_id is None:
            msg = f"{self!r}: {what}: this processor holds no lease"
            raise LeaseLost(msg)
        data = value if isinstance(value, bytes) else json.dumps(value).encode()
        if len(data) > size:
            msg = f"{self!r}: {what}: {len(data)} bytes do not fit in the {size}-byte region"
            raise CoordinationError(msg)
        try:
            self.blob.upload_page(
                data.ljust(size, b"\x00"), offset=offset, length=size, lease=lease_id
            )
        except AzureError as error:
            if getattr(error, "status_code", None) in (409, 412):
                msg = f"{self!r}: {what}: the leader's lease is lost ({describe_error(error)})"
                raise LeaseLost(msg) from error
            raise self._error(what, error) from error

    def read_bundle(self) -> JobModelBundle | None:
        raw = self._read(BUNDLE_OFFSET, BUNDLE_BYTES)
        if raw is None:
            return None
        try:
            return JobModelBundle.from_json(raw)
        except (ValueError, ModelError) as error:
            msg = f"{self!r}: the job model bundle is unreadable: {error}"
            raise CoordinationError(msg) from error

    def publish_bundle(self, bundle: JobModelBundle, lease_id: str | None) -> None:
        self._write(
            BUNDLE_OFFSET, BUNDLE_BYTES, bundle.to_json(), lease_id, "publish the job model"
        )

    def read_barrier(self) -> tuple[str, str] | None:
        """``(state, version)`` or None before the first barrier."""
        raw = self._read(BARRIER_OFFSET, BARRIER_BYTES)
        if raw is None:
            return None
        state, _, version = str(json.loads(raw)).partition(" ")
        return state, version

    def publish_barrier(self, state: str, version: str, lease_id: str | None) -> None:
        self._write(
            BARRIER_OFFSET,
            BARRIER_BYTES,
            f"{state} {version}",
            lease_id,
            f"publish {state} {version}",
        )

    def read_processors(self) -> list[str]:
        raw = self._read(PROCESSORS_OFFSET, PROCESSORS_BYTES)
        return [] if raw is None else [str(p) for p in json.loads(raw)]

    def publish_processors(self, processors: list[str], lease_id: str | None) -> None:
        self._write(
            PROCESSORS_OFFSET,
            PROCESSORS_BYTES,
            list(processors),
            lease_id,
            "publish the processor list",
        )
