"""ZkMetadataStore: values in ZooKeeper nodes, split into segments (SAMZA.md §7.5).

A value is written with an 8-byte big-endian CRC32 trailer, split into segments of at most
1,000,000 bytes (under the ZooKeeper client's write limit), segment ``i`` at
``<base>/<encoded key>/<i>``. A read concatenates the segments and checks the trailer; a
mismatch is a :class:`~samza_nb.errors.MetadataStoreError` naming the key.

Two of Samza's bugs are fixed: a shorter value deletes the stale higher segments of a longer
one, and no segment exceeds what the client can write. Keys are encoded reversibly into one
node name (:func:`encode_key`), so any key, ``/``, spaces and unicode included, comes back under
its own name from :meth:`ZkMetadataStore.all`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, unquote

from samza_nb.errors import JobLeaseError, MetadataStoreError, SamzaNbError
from samza_nb.metadata.base import (
    Fence,
    MetadataStore,
    check_fence,
    check_key,
    check_value,
    namespace_suffix,
    parse_namespaced_key,
)
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.metadata.zk_on_demand import OnDemandSession

__all__ = ["SEGMENT_BYTES", "TRANSACTION_BYTES", "ZkMetadataStore", "decode_key", "encode_key"]

#: The largest segment written (the ZooKeeper client refuses writes near 1 MiB).
SEGMENT_BYTES = 1_000_000

#: The most :meth:`ZkMetadataStore.put_all` writes in one transaction (one request < 1 MiB).
TRANSACTION_BYTES = 900_000

_CRC_BYTES = 8
# Printable ASCII stays readable; '/' and '%' (and everything else) are percent-encoded.
_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in "/%")


def encode_key(key: str) -> str:
    """A node name for ``key``: percent-encoding of ``/``, ``%``, control and non-ASCII
    characters, and of the names ZooKeeper reserves (``.`` and ``..``).

    >>> encode_key('{"key":"a/b","namespace":"n"}')
    '{"key":"a%2Fb","namespace":"n"}'
    >>> decode_key(encode_key("ünï code/..")) == "ünï code/.."
    True
    >>> encode_key("..")
    '%2E%2E'
    """
    name = quote(key, safe=_SAFE, encoding="utf-8")
    if name in (".", ".."):
        name = name.replace(".", "%2E")
    return name


def decode_key(name: str) -> str:
    """The key of a node name made by :func:`encode_key`."""
    return unquote(name, encoding="utf-8", errors="strict")


def _crc(value: bytes) -> bytes:
    return struct.pack(">q", zlib.crc32(value) & 0xFFFFFFFF)


class ZkMetadataStore(MetadataStore):
    """Key → bytes under ``base_path`` of the ZooKeeper at ``connect`` (``host:port/chroot``).

    Options: ``session_timeout`` and ``connection_timeout`` (seconds), ``max_tries`` (per
    call). ``client=`` shares an existing :class:`ZkClient` (the coordinator's session) instead
    of opening one; the store then does not close it. The chroot must exist; the base path is
    created.
    """

    def __init__(
        self,
        connect: str | None,
        base_path: str,
        *,
        client: ZkClient | None = None,
        session_timeout: float = 30.0,
        connection_timeout: float = 60.0,
        max_tries: int = 5,
    ) -> None:
        if not isinstance(base_path, str) or not base_path.strip("/"):
            msg = f"ZkMetadataStore needs a base path below the root, got {base_path!r}"
            raise MetadataStoreError(msg)
        self.base_path = "/" + base_path.strip("/")
        reopen: Callable[[], ZkClient] | None = None
        if client is None:
            if connect is None:
                msg = "ZkMetadataStore needs a connect string (host:port/chroot) or client="
                raise MetadataStoreError(msg)

            def reopen() -> ZkClient:
                return ZkClient(
                    connect,
                    session_timeout=session_timeout,
                    connection_timeout=connection_timeout,
                    max_tries=max_tries,
                )

            client = reopen()
        #: This store's own session (released once its job ended), or the shared client.
        self._session = OnDemandSession(client, reopen)
        try:
            self._guard(lambda: self._zk.ensure(self.base_path), "create the base path")
        except MetadataStoreError:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"ZkMetadataStore({self._session.description!r}, {self.base_path!r})"

    @property
    def _zk(self) -> ZkClient:
        return self._session.client

    def _path(self, key: str) -> str:
        return f"{self.base_path}/{encode_key(check_key(key, 'ZkMetadataStore'))}"

    def _guard(self, action: Any, what: str) -> Any:
        try:
            with self._session.use():
                return action()
        except (MetadataStoreError, JobLeaseError):
            raise
        except SamzaNbError as exc:
            msg = f"ZkMetadataStore {self.base_path}: {what}: {exc}"
            raise MetadataStoreError(msg) from exc

    # -- reads ---------------------------------------------------------------------------------
    def get(self, key: str) -> bytes | None:
        return self._guard(lambda: self._read(key, self._path(key)), f"read {key!r}")

    def _read(self, key: str, path: str) -> bytes | None:
        segments = self._zk.children(path)
        if not segments:
            return None
        numbers = sorted(int(name) for name in segments if name.isdigit())
        if numbers != list(range(len(numbers))) or not numbers:
            msg = (
                f"ZkMetadataStore {self.base_path}: the value of {key!r} has segments "
                f"{numbers}, not 0..n-1 (a write was interrupted)"
            )
            raise MetadataStoreError(msg)
        parts: list[bytes] = []
        for number in numbers:
            found = self._zk.get(f"{path}/{number}")
            if found is None:
                return None  # deleted while we read
            parts.append(found[0])
        data = b"".join(parts)
        if len(data) < _CRC_BYTES:
            msg = f"ZkMetadataStore {self.base_path}: the value of {key!r} has no CRC32 trailer"
            raise MetadataStoreError(msg)
        value, trailer = data[:-_CRC_BYTES], data[-_CRC_BYTES:]
        if _crc(value) != trailer:
            msg = (
                f"ZkMetadataStore {self.base_path}: the value of {key!r} fails its CRC32 "
                "check (corrupted, or written concurrently)"
            )
            raise MetadataStoreError(msg)
        return value

    def all(self) -> dict[str, bytes]:
        return self._scan(lambda key: key, "list every key")

    def entries_in_namespace(self, namespace: str) -> dict[str, bytes]:
        """One namespace: the key names are listed once and only that namespace's values read.

        Every node of the store is a key under the base path, whatever its namespace; reading
        every value to keep one namespace's cost a processor two requests per key of the whole
        job (checkpoints, epoch plans, assignments, ...) at each idle wait and drain poll.
        """
        suffix = namespace_suffix(namespace)

        def plain(key: str) -> str | None:
            parsed = parse_namespaced_key(key) if key.endswith(suffix) else None
            return parsed[1] if parsed is not None and parsed[0] == namespace else None

        return self._scan(plain, f"list namespace {namespace!r}")

    def _scan(self, select: Callable[[str], str | None], what: str) -> dict[str, bytes]:
        """The values of the keys ``select`` names (None: not read), under the names it gives."""

        def scan() -> dict[str, bytes]:
            result: dict[str, bytes] = {}
            for name in self._zk.children(self.base_path) or []:
                key = decode_key(name)
                selected = select(key)
                if selected is None:
                    continue
                value = self._read(key, f"{self.base_path}/{name}")
                if value is not None:
                    result[selected] = value
            return result

        return self._guard(scan, what)

    # -- writes --------------------------------------------------------------------------------
    def put(self, key: str, value: bytes) -> None:
        path = self._path(key)
        data = check_value(key, value, "ZkMetadataStore")
        self._guard(lambda: self._write(path, data), f"write {key!r}")

    def _write(self, path: str, value: bytes) -> None:
        data = value + _crc(value)
        segments = [data[i : i + SEGMENT_BYTES] for i in range(0, len(data), SEGMENT_BYTES)]
        for number, segment in enumerate(segments):
            self._zk.put(f"{path}/{number}", segment)
        # Samza leaves the higher segments of a longer earlier value behind; delete them.
        stale = [
            int(name)
            for name in self._zk.children(path) or []
            if name.isdigit() and int(name) >= len(segments)
        ]
        for number in sorted(stale, reverse=True):
            self._zk.delete(f"{path}/{number}")

    def put_all(
        self,
        entries: Mapping[str, bytes],
        *,
        fence: Fence | None = None,
        guard: Callable[[Any], None] | None = None,
    ) -> None:
        """Write ``entries`` in one ZooKeeper transaction when they fit in one request.

        ``fence`` (a JobLease's ``(key, generation)``): the transaction also checks that the
        value under the fence key is that generation and has not changed since it was read.

        ``guard(tx)`` adds check operations to that transaction (for example
        ``ZkJobCoordinator.fence``); when a check fails nothing is written and
        :class:`~samza_nb.errors.JobLeaseError` says this writer was fenced. Entries too large
        for one request are written one by one, which a guard does not allow.
        """
        checked = {
            check_key(key, "ZkMetadataStore"): check_value(key, value, "ZkMetadataStore")
            for key, value in entries.items()
        }
        if fence is not None:
            guard = self._fence_guard(fence, guard)
        if not checked and guard is None:
            return
        size = sum(len(value) + len(encode_key(key)) + 64 for key, value in checked.items())
        if size > TRANSACTION_BYTES:
            if guard is not None:
                msg = (
                    f"ZkMetadataStore {self.base_path}: {len(checked)} entries of {size} bytes "
                    f"do not fit in one fenced transaction (at most {TRANSACTION_BYTES})"
                )
                raise MetadataStoreError(msg)
            for key, value in checked.items():
                self.put(key, value)
            return
        self._guard(lambda: self._write_all(checked, guard), f"write {len(checked)} entries")

    def _fence_guard(
        self, fence: Fence, inner: Callable[[Any], None] | None
    ) -> Callable[[Any], None]:
        """A guard checking the fence's generation, stored as one segment, by znode version."""
        key, _generation = fence
        segment = f"{self._path(key)}/0"
        found = self._guard(lambda: self._zk.get(segment), f"read fence {key!r}")
        stored = None if found is None else found[0][:-8]
        check_fence(fence, stored, f"ZkMetadataStore {self.base_path}")
        version = -1 if found is None else found[1].version

        def guard(tx: Any) -> None:
            if found is not None:
                tx.check(segment, version)
            if inner is not None:
                inner(tx)

        return guard

    def _write_all(self, entries: dict[str, bytes], guard: Callable[[Any], None] | None) -> None:
        rechecked = False
        for _ in range(5):
            plans = [
                (path, value + _crc(value), self._zk.children(path))
                for key, value in entries.items()
                for path in (self._path(key),)
            ]
            checks = 0

            def build(tx: Any, plans: list[Any] = plans) -> None:
                nonlocal checks
                if guard is not None:
                    guard(tx)
                checks = len(tx.operations)
                for path, data, existing in plans:
                    if existing is None:
                        tx.create(path, b"")
                        tx.create(f"{path}/0", data)
                        continue
                    if "0" in existing:
                        tx.set_data(f"{path}/0", data)
                    else:
                        tx.create(f"{path}/0", data)
                    stale = sorted((int(n) for n in existing if n.isdigit() and n != "0"), reverse=True)
                    for number in stale:
                        tx.delete(f"{path}/{number}")

            results = self._zk.commit(
                f"write {len(entries)} entries under {self.base_path}", build, raise_first=False
            )
            failed = [r for r in results if isinstance(r, Exception)]
            if not failed:
                return
            guard_failed = [r for r in results[:checks] if isinstance(r, Exception)]
            if any(type(r).__name__ != "RolledBackError" for r in guard_failed):
                moved = all(type(r).__name__ in ("BadVersionError", "RolledBackError") for r in guard_failed)
                if moved and not rechecked:
                    # A node the guard checked by version changed (a vanished node, such as a
                    # lost session's, never comes back): a guard that reads what it checks
                    # (ZkJobCoordinator.fence) is built once more from fresh reads.
                    rechecked = True
                    continue
                msg = (
                    f"ZkMetadataStore {self.base_path}: the write of {len(entries)} entries was "
                    "fenced (this writer's session or lease is no longer current); nothing "
                    "was written"
                )
                raise JobLeaseError(msg) from guard_failed[0]
            # Another writer changed the same keys meanwhile: read their segments again.
        msg = f"ZkMetadataStore {self.base_path}: the keys kept changing while writing {sorted(entries)}"
        raise MetadataStoreError(msg)

    def delete(self, key: str) -> None:
        path = self._path(key)
        self._guard(lambda: self._zk.delete_tree(path), f"delete {key!r}")

    def release_session(self) -> None:
        """End this store's own session until the next call (its job ended; see
        samza_nb/metadata/zk_on_demand.py)."""
        self._session.release()

    def close(self) -> None:
        self._session.close()
