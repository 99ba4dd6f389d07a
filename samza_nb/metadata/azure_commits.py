"""The commit blob of the Azure metadata store: fenced commits as one conditional write.

Blob storage has no transaction over several blobs, so a fenced commit
(``put_all(entries, guard=…)`` or ``fence=…``) is not written key by key. Every key a fenced
commit wrote lives in one block blob, ``c/commits``, together with the fencing tokens of the
job's processors (processor id → the id of the fencing lease it holds on its coordination
blob). A commit reads that blob, checks there that its processor's token is still registered
and that no key it writes was written by another processor since it last read it, and writes
the whole blob back *conditional on the etag it read* (If-Match). Check and write are therefore
one atomic step at the server: a leader that revoked the token, or any other commit, between
the read and the write makes the write fail with 412, and the commit reads again and checks
again (a revoked processor then gets :class:`~samza_nb.errors.JobLeaseError`, having written
nothing). A leader fences a processor out by breaking its lease and revoking its token here.

Each entry carries a version, bumped by every write of it; a store remembers per thread the
version it last read or wrote, which is what "written by another processor since" compares.
The blob is cached per store and read again only when its etag changed (a conditional GET).
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from samza_nb.errors import JobLeaseError, MetadataStoreError
from samza_nb.metadata.azure_storage import describe_error

__all__ = ["COMMIT_BLOB", "AzureWriteGuard", "CommitBlob", "CommitState"]

#: The blob's name: outside the ``k/`` and ``n/`` prefixes of the per-key blobs.
COMMIT_BLOB = "c/commits"
#: Reads and conditional writes of one commit before it gives up: each failed write means
#: another commit landed in between, so this bounds a pile-up, not one slow commit.
_TRIES = 50
#: The first and the longest backoff after a lost race, in seconds.
_BACKOFF_S = 0.005
_MAX_BACKOFF_S = 0.2


@dataclass(frozen=True)
class CommitState:
    """The commit blob's content as read (``etag`` None: the blob does not exist yet)."""

    etag: str | None = None
    #: Processor id → its registered fencing token.
    fences: dict[str, str] = field(default_factory=dict)
    #: Key → (version, value).
    entries: dict[str, tuple[int, bytes]] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: bytes, etag: str) -> CommitState:
        document = json.loads(data) if data else {}
        entries = {
            key: (int(version), base64.b64decode(value))
            for key, (version, value) in document.get("entries", {}).items()
        }
        return cls(etag, dict(document.get("fences", {})), entries)

    def to_bytes(self) -> bytes:
        entries = {
            key: [version, base64.b64encode(value).decode("ascii")]
            for key, (version, value) in self.entries.items()
        }
        return json.dumps({"fences": self.fences, "entries": entries}, sort_keys=True).encode()

    def with_entries(self, written: dict[str, bytes]) -> CommitState:
        """This state with ``written`` set, each written key's version bumped."""
        entries = dict(self.entries)
        for key, value in written.items():
            entries[key] = (entries.get(key, (0, b""))[0] + 1, value)
        return replace(self, entries=entries)

    def without(self, key: str) -> CommitState:
        return replace(self, entries={k: v for k, v in self.entries.items() if k != key})

    def with_fence(self, processor_id: str, token: str | None) -> CommitState:
        fences = {pid: t for pid, t in self.fences.items() if pid != processor_id}
        if token is not None:
            fences[processor_id] = token
        return replace(self, fences=fences)


class AzureWriteGuard:
    """What a guarded ``put_all`` checks in the same conditional write as its entries: the
    fencing tokens of processors (:meth:`verify` runs on each read of the commit blob)."""

    def __init__(self) -> None:
        self.tokens: list[tuple[str, str, str]] = []
        #: The commit blob as read for the write being checked.
        self.state = CommitState()

    def require_token(self, processor_id: str, token: str | None, what: str) -> None:
        """Write only while ``token`` is the fencing token registered for ``processor_id``."""
        if not token:
            msg = f"{what}: no fencing lease is held, so the write is fenced"
            raise JobLeaseError(msg)
        self.tokens.append((processor_id, token, what))

    def verify(self) -> None:
        for processor_id, token, what in self.tokens:
            if self.state.fences.get(processor_id) != token:
                msg = (
                    f"{what}: the fencing lease is no longer held (the leader dropped processor "
                    f"{processor_id!r}, or another process took its id); nothing was written"
                )
                raise JobLeaseError(msg)


class CommitBlob:
    """The commit blob of one container (``container``: a ContainerClient); ``owner`` names the
    store in messages."""

    def __init__(self, container: Any, owner: str) -> None:
        self._blob = container.get_blob_client(COMMIT_BLOB)
        self._owner = owner
        self._lock = threading.Lock()
        self._cached = CommitState()

    def current(self) -> CommitState:
        """The blob as it is now (from the cache when its etag did not change)."""
        from azure.core import MatchConditions
        from azure.core.exceptions import (
            AzureError,
            ResourceNotFoundError,
            ResourceNotModifiedError,
        )

        with self._lock:
            cached = self._cached
        options: dict[str, Any] = {}
        if cached.etag is not None:
            options.update(etag=cached.etag, match_condition=MatchConditions.IfModified)
        try:
            downloader = self._blob.download_blob(**options)
            state = CommitState.parse(downloader.readall(), str(downloader.properties.etag))
        except ResourceNotModifiedError:
            return cached
        except ResourceNotFoundError:
            state = CommitState()
        except AzureError as error:
            if getattr(error, "status_code", None) == 304:
                return cached
            msg = f"{self._owner}: read {COMMIT_BLOB}: {describe_error(error)}"
            raise MetadataStoreError(msg) from error
        with self._lock:
            self._cached = state
        return state

    def update(self, change: Callable[[CommitState], CommitState | None], what: str) -> CommitState:
        """Apply ``change`` to the current state and write the result conditional on the etag
        read; on a lost race read again and apply it again. ``change`` raises to refuse (the
        fence, a conflict) and returns None when there is nothing to write."""
        from azure.core import MatchConditions
        from azure.core.exceptions import AzureError, ResourceExistsError, ResourceModifiedError

        for attempt in range(_TRIES):
            if attempt:
                # Lost a race: back off a random while, so committers that collided spread out.
                time.sleep(random.uniform(0, min(_BACKOFF_S * 2**attempt, _MAX_BACKOFF_S)))
            state = self.current()
            new = change(state)
            if new is None:
                return state
            options: dict[str, Any] = {"overwrite": True}
            if state.etag is None:
                options["if_none_match"] = "*"
            else:
                options.update(etag=state.etag, match_condition=MatchConditions.IfNotModified)
            try:
                result = self._blob.upload_blob(new.to_bytes(), **options)
            except (ResourceModifiedError, ResourceExistsError):
                continue  # another commit landed since the read: check again on what it left
            except AzureError as error:
                if getattr(error, "status_code", None) in (409, 412):
                    continue
                msg = f"{self._owner}: {what}: {describe_error(error)}"
                raise MetadataStoreError(msg) from error
            written = replace(new, etag=str(result.get("etag")))
            with self._lock:
                self._cached = written
            return written
        msg = f"{self._owner}: {what}: {COMMIT_BLOB} changed under each of {_TRIES} tries; nothing was written"
        raise MetadataStoreError(msg)
