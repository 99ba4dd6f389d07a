"""AzureBlobMetadataStore: one block blob per key in a container of the job's own (the keys
fenced commits wrote share one, the commit blob).

The container is named from the job (``samza-nb-<globalAppId>``, Azure's naming rules, long
names truncated with a short hash). A key becomes the blob name ``k/<encoded key>``: every
byte outside ``[A-Za-z0-9_-]`` is written ``~XX`` (``.`` too, so no name ends with a dot),
and a namespaced key is ``n/<namespace>/<key>`` (a namespace is listed by prefix), so
:meth:`AzureBlobMetadataStore.all` returns the original keys. Values are the JSON bytes the
project stores, written whole.

Conditional writes: :meth:`AzureBlobMetadataStore.read` returns a value with its etag and
:meth:`AzureBlobMetadataStore.put_if` writes only if the blob still has that etag (or does not
exist yet), so read-modify-write updates (the run id, the job lease's generation) cannot race.

Commits of a distributed job are fenced, atomically. ``put_all(entries, guard=coordinator.fence)``
hands the guard an :class:`AzureWriteGuard`; the Azure coordinator names there its processor and
fencing token (the id of the lease it holds on its coordination blob). The entries, the check
of the token and the check that no key was written by another processor since this store read
it are one conditional write of the commit blob (:mod:`samza_nb.metadata.azure_commits`): a
processor the leader dropped (its token revoked) gets :class:`~samza_nb.errors.JobLeaseError`,
and one whose key another processor wrote since gets
:class:`~samza_nb.errors.CommitConflictError`; either way nothing of the commit is written.
``fence=(key, generation)`` (a JobLease's token) is checked by reading the fence blob with the
lease the :class:`~samza_nb.coordination.azure.lease.AzureJobLease` holds on it, immediately
before that write (the generation lives in its own blob, so this check is not part of it).
A key a fenced commit wrote lives in the commit blob from then on: reads, plain writes and
deletes of it go there, and listings merge both. Versions seen are kept per thread, and
listings (:meth:`AzureBlobMetadataStore.all`) do not count as reads there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from samza_nb.config import Config, global_app_id
from samza_nb.errors import CommitConflictError, JobLeaseError, MetadataStoreError
from samza_nb.metadata.azure_commits import AzureWriteGuard, CommitBlob, CommitState
from samza_nb.metadata.azure_storage import AzureAccount, container_name, describe_error
from samza_nb.metadata.base import (
    Fence,
    MetadataStore,
    check_fence,
    check_key,
    check_value,
    namespaced_key,
    parse_namespaced_key,
)

__all__ = [
    "AzureBlobMetadataStore",
    "AzureWriteGuard",
    "ConditionFailed",
    "blob_name_of",
    "key_of_blob",
]

_PREFIX = "k/"
_NAMESPACED = "n/"
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_MAX_BLOB_NAME = 1024


class ConditionFailed(MetadataStoreError):
    """A conditional write found the blob changed since it was read."""


def _escape(text: str) -> str:
    return "".join(
        chr(byte) if chr(byte) in _SAFE else f"~{byte:02X}" for byte in text.encode("utf-8")
    )


def _unescape(text: str) -> str:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "~":
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(ord(text[i]))
            i += 1
    return out.decode("utf-8")


def blob_name_of(key: str) -> str:
    """The blob name of a key (reversible): bytes outside ``[A-Za-z0-9_-]`` become ``~XX``.

    ``~`` is unreserved in URLs, so the name travels unchanged (a ``%`` in a blob name is
    encoded once more by the client and breaks request signing). A namespaced key (Samza's
    ``{"key":…,"namespace":…}``) becomes ``n/<namespace>/<key>``, so one namespace is listed
    by prefix.

    >>> blob_name_of("a/b.~")
    'k/a~2Fb~2E~7E'
    >>> blob_name_of('{"key":"Partition 0","namespace":"checkpoint"}')
    'n/checkpoint/Partition~200'
    >>> key_of_blob(blob_name_of("a/b.~")) == "a/b.~"
    True
    """
    parsed = parse_namespaced_key(key)
    if parsed is not None and namespaced_key(*parsed) == key:
        return f"{_NAMESPACED}{_escape(parsed[0])}/{_escape(parsed[1])}"
    return _PREFIX + _escape(key)


def key_of_blob(name: str) -> str:
    """The key of a blob name made by :func:`blob_name_of`."""
    if name.startswith(_NAMESPACED):
        namespace, _, key = name[len(_NAMESPACED) :].partition("/")
        return namespaced_key(_unescape(namespace), _unescape(key))
    return _unescape(name[len(_PREFIX) :])


class AzureBlobMetadataStore(MetadataStore):
    """Key → bytes as block blobs of ``container`` in the storage account ``account``.

    The container is created when missing. ``AzureBlobMetadataStore.for_job(config)`` names it
    from the job.
    """

    def __init__(self, account: AzureAccount, container: str, *, create: bool = True) -> None:
        from azure.core.exceptions import AzureError, ResourceExistsError

        self.account = account
        self.container = container
        self._service = account.blob_service()
        self._client = self._service.get_container_client(container)
        self._fence_leases: dict[str, str] = {}
        self._commits = CommitBlob(self._client, repr(self))
        #: Per thread, the etag of each key as this store last read or wrote it on that thread
        #: (None: read as missing; ``v<n>``: version n in the commit blob); a fenced write of
        #: the key is refused when another processor wrote it since. Per thread:
        #: a processor plans and commits on its own thread, and a notebook's status view
        #: reading a checkpoint must not make a stale commit of it current.
        self._seen = threading.local()
        if create:
            try:
                self._client.create_container()
            except ResourceExistsError:
                pass
            except AzureError as error:
                self._service.close()
                msg = f"{self!r}: cannot create the container: {describe_error(error)}"
                raise MetadataStoreError(msg) from error

    @classmethod
    def for_job(
        cls,
        config: Config | Mapping[str, Any] | None = None,
        *,
        connect: str | None = None,
        create: bool = True,
    ) -> AzureBlobMetadataStore:
        cfg = Config.of(config)
        return cls(
            AzureAccount.from_config(cfg, connect),
            container_name("samza-nb-", global_app_id(cfg)),
            create=create,
        )

    def __repr__(self) -> str:
        return f"AzureBlobMetadataStore({self.account.description!r}, {self.container!r})"

    @property
    def _etags(self) -> dict[str, str | None]:
        """This thread's etags (see ``_seen``)."""
        etags: dict[str, str | None] | None = getattr(self._seen, "etags", None)
        if etags is None:
            etags = self._seen.etags = {}
        return etags

    def blob(self, key: str) -> Any:
        """The BlobClient of ``key``."""
        name = blob_name_of(check_key(key, repr(self)))
        if len(name) > _MAX_BLOB_NAME:
            msg = f"{self!r}: key {key[:60]!r}… is too long for a blob name ({len(name)} > {_MAX_BLOB_NAME})"
            raise MetadataStoreError(msg)
        return self._client.get_blob_client(name)

    def _fail(self, what: str, error: BaseException) -> MetadataStoreError:
        return MetadataStoreError(f"{self!r}: {what}: {describe_error(error)}")

    # -- reads ---------------------------------------------------------------------------------
    def read(self, key: str) -> tuple[bytes | None, str | None]:
        """``(value, etag)``; ``(None, None)`` when the key is missing."""
        committed = self._commits.current().entries.get(key)
        if committed is not None:
            self._etags[key] = f"v{committed[0]}"
            return committed[1], f"v{committed[0]}"
        value, etag = self._download(key)
        self._etags[key] = etag
        return value, etag

    def _download(self, key: str) -> tuple[bytes | None, str | None]:
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        blob = self.blob(key)
        try:
            downloader = blob.download_blob()
            return downloader.readall(), downloader.properties.etag
        except ResourceNotFoundError:
            return None, None
        except AzureError as error:
            msg = f"read {key!r}"
            raise self._fail(msg, error) from error

    def get(self, key: str) -> bytes | None:
        return self.read(key)[0]

    def _scan(self, prefix: str) -> dict[str, bytes]:
        from azure.core.exceptions import AzureError

        try:
            names = [item.name for item in self._client.list_blobs(name_starts_with=prefix)]
        except AzureError as error:
            what = f"list the keys under {prefix!r}"
            raise self._fail(what, error) from error
        keys = [key_of_blob(name) for name in names]
        with ThreadPoolExecutor(max_workers=max(1, min(8, len(keys)))) as pool:
            values = [value for value, _etag in pool.map(self._download, keys)]
        return {key: value for key, value in zip(keys, values, strict=True) if value is not None}

    def all(self) -> dict[str, bytes]:
        committed = {key: value for key, (_version, value) in self._commits.current().entries.items()}
        return {**self._scan(_PREFIX), **self._scan(_NAMESPACED), **committed}

    def entries_in_namespace(self, namespace: str) -> dict[str, bytes]:
        """One namespace, listed by its blob-name prefix (and the commit blob's keys in it)."""
        prefix = f"{_NAMESPACED}{_escape(namespace)}/"
        committed = {
            key: value
            for key, (_version, value) in self._commits.current().entries.items()
            if blob_name_of(key).startswith(prefix)
        }
        found = {**self._scan(prefix), **committed}
        result: dict[str, bytes] = {}
        for key, value in found.items():
            parsed = parse_namespaced_key(key)
            if parsed is not None and parsed[0] == namespace:
                result[parsed[1]] = value
        return result

    # -- writes --------------------------------------------------------------------------------
    def put(self, key: str, value: bytes) -> None:
        from azure.core.exceptions import AzureError

        data = check_value(key, value, repr(self))
        if key in self._commits.current().entries:  # a key a fenced commit wrote lives there
            what = f"write {key!r}"
            state = self._commits.update(lambda current: current.with_entries({key: data}), what)
            self._etags[key] = f"v{state.entries[key][0]}"
            return
        try:
            result = self.blob(key).upload_blob(data, overwrite=True, **self._lease_of(key))
        except AzureError as error:
            msg = f"write {key!r}"
            raise self._fail(msg, error) from error
        self._etags[key] = str(result.get("etag"))

    def put_if(self, key: str, value: bytes, etag: str | None, *, lease: str | None = None) -> str:
        """Write ``value`` only if the blob still has ``etag`` (None: only if it does not
        exist); returns the new etag, or raises :class:`ConditionFailed`."""
        from azure.core import MatchConditions
        from azure.core.exceptions import AzureError, ResourceExistsError, ResourceModifiedError

        data = check_value(key, value, repr(self))
        if key in self._commits.current().entries:
            return self._put_committed_if(key, data, etag)
        options: dict[str, Any] = {"overwrite": True}
        if etag is None:
            options["if_none_match"] = "*"
        else:
            options.update(etag=etag, match_condition=MatchConditions.IfNotModified)
        if lease is not None:
            options["lease"] = lease
        try:
            result = self.blob(key).upload_blob(data, **options)
        except (ResourceModifiedError, ResourceExistsError) as error:
            msg = f"{self!r}: {key!r} changed since it was read"
            raise ConditionFailed(msg) from error
        except AzureError as error:
            if getattr(error, "status_code", None) in (409, 412):
                msg = f"{self!r}: {key!r} changed since it was read ({describe_error(error)})"
                raise ConditionFailed(msg) from error
            what = f"write {key!r}"
            raise self._fail(what, error) from error
        etag = str(result.get("etag"))
        self._etags[key] = etag
        return etag

    def _put_committed_if(self, key: str, data: bytes, etag: str | None) -> str:
        """``put_if`` of a key the commit blob holds: its etag is ``v<version>`` there."""

        def write(state: CommitState) -> CommitState:
            current = state.entries.get(key)
            if etag != (None if current is None else f"v{current[0]}"):
                msg = f"{self!r}: {key!r} changed since it was read"
                raise ConditionFailed(msg)
            return state.with_entries({key: data})

        state = self._commits.update(write, f"write {key!r}")
        version = f"v{state.entries[key][0]}"
        self._etags[key] = version
        return version

    def hold_fence_lease(self, key: str, lease_id: str | None) -> None:
        """Writes of ``key`` and fence checks on it use ``lease_id`` (a JobLease holds it)."""
        if lease_id is None:
            self._fence_leases.pop(key, None)
        else:
            self._fence_leases[key] = lease_id

    def _lease_of(self, key: str) -> dict[str, str]:
        lease = self._fence_leases.get(key)
        return {"lease": lease} if lease else {}

    def put_all(
        self,
        entries: Mapping[str, bytes],
        *,
        fence: Fence | None = None,
        guard: Callable[[AzureWriteGuard], None] | None = None,
    ) -> None:
        """Write ``entries``. Unfenced, key by key. Fenced (``fence`` or ``guard``), as one
        conditional write of the commit blob that also checks the guard's fencing tokens and
        that no key this store read or wrote before was written by another processor since
        (see the module doc): a revoked token raises :class:`~samza_nb.errors.JobLeaseError`,
        a key written since :class:`~samza_nb.errors.CommitConflictError`, and then nothing
        is written."""
        checked = {
            check_key(key, repr(self)): check_value(key, value, repr(self))
            for key, value in entries.items()
        }
        if guard is None and fence is None:
            for key, value in checked.items():
                self.put(key, value)
            return
        conditions = AzureWriteGuard()
        if guard is not None:
            guard(conditions)
        if fence is not None:
            self._check_fence(fence)
        seen = self._etags
        # Keys this store saw as plain blobs (only plain writes so far): whether one changed
        # since is read from its blob now, as no fenced commit has taken it into the commit blob.
        changed_blobs = {
            key
            for key, value in checked.items()
            if key in seen and not (seen[key] or "").startswith("v") and self._blob_changed(key, value, seen[key])
        }

        def commit(state: CommitState) -> CommitState | None:
            # Conflicts first: a processor frozen through its tasks' move is told which key
            # moved on (its fence, revoked meanwhile, refuses it too).
            for key, value in checked.items():
                current = state.entries.get(key)
                if current is None:
                    changed = key in changed_blobs
                else:
                    # The same bytes are no conflict: this very write, whose response was lost
                    # and which the client retried, or the same bytes from another processor.
                    changed = key in seen and seen[key] != f"v{current[0]}" and current[1] != value
                if changed:
                    msg = (
                        f"{self!r}: {key!r} was written by another processor since this one read it "
                        "(its tasks moved while it was frozen or cut off); nothing of this commit "
                        "was written"
                    )
                    raise CommitConflictError(msg, key=key)
            conditions.state = state
            conditions.verify()
            return state.with_entries(checked) if checked else None

        state = self._commits.update(commit, f"commit {len(checked)} keys")
        for key in checked:
            seen[key] = f"v{state.entries[key][0]}"

    def _blob_changed(self, key: str, value: bytes, etag: str | None) -> bool:
        """Whether ``key``'s blob no longer has ``etag`` and holds bytes other than ``value``."""
        current, now = self._download(key)
        return now != etag and current != value

    def register_fence(self, processor_id: str, token: str) -> None:
        """``token`` is from now on the one fenced commits of ``processor_id`` must carry."""
        self._commits.update(
            lambda state: state.with_fence(processor_id, token), f"register the fence of {processor_id!r}"
        )

    def fence_token(self, processor_id: str) -> str | None:
        """The fencing token registered for ``processor_id`` (None: none)."""
        return self._commits.current().fences.get(processor_id)

    def revoke_fence(self, processor_id: str, token: str) -> None:
        """Fence ``processor_id`` out: its token is dropped if it is still ``token`` (one it
        registered since, with a lease taken after the leader broke the old one, stays)."""
        self._commits.update(
            lambda state: state.with_fence(processor_id, None) if state.fences.get(processor_id) == token else None,
            f"revoke the fence of {processor_id!r}",
        )

    def _check_fence(self, fence: Fence) -> None:
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        key, _generation = fence
        lease = self._fence_leases.get(key)
        try:
            stored = self.blob(key).download_blob(**({"lease": lease} if lease else {})).readall()
        except ResourceNotFoundError:
            stored = None
        except AzureError as error:
            if getattr(error, "status_code", None) == 412:
                msg = f"{self!r}: fenced: the job lease on {key!r} is no longer held; nothing was written"
                raise JobLeaseError(msg) from error
            what = f"read fence {key!r}"
            raise self._fail(what, error) from error
        check_fence(fence, stored, repr(self))

    def delete(self, key: str) -> None:
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        try:
            self.blob(key).delete_blob(**self._lease_of(key))
        except ResourceNotFoundError:
            pass
        except AzureError as error:
            msg = f"delete {key!r}"
            raise self._fail(msg, error) from error
        if key in self._commits.current().entries:
            what = f"delete {key!r}"
            self._commits.update(lambda state: state.without(key) if key in state.entries else None, what)
        self._etags[key] = None

    def delete_container(self) -> None:
        """Remove the container with every key (``samza-nb reset`` of an Azure job)."""
        from azure.core.exceptions import ResourceNotFoundError

        try:
            self._client.delete_container()
        except ResourceNotFoundError:
            pass

    def close(self) -> None:
        self._service.close()
