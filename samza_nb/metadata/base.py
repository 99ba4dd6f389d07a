"""The MetadataStore contract (SAMZA.md §7.1, SEP host affinity): string keys, byte values.

The project stores JSON in every value; nothing is ever pickled into a metadata store.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import TracebackType

from samza_nb.errors import JobLeaseError, MetadataStoreError

__all__ = [
    "Fence",
    "MetadataStore",
    "check_fence",
    "generation_of",
    "namespace_suffix",
    "namespaced_key",
    "parse_namespaced_key",
]

#: ``(key, generation)``: write only while the value under ``key`` is ``generation`` (a job
#: lease's fencing token, stored as its decimal digits).
Fence = tuple[str, int]


def namespaced_key(namespace: str, key: str) -> str:
    """Samza's namespaced key: the JSON ``{"key":<key>,"namespace":<namespace>}``.

    >>> namespaced_key("set-config", "job.name")
    '{"key":"job.name","namespace":"set-config"}'
    """
    return json.dumps(
        {"key": key, "namespace": namespace}, separators=(",", ":"), ensure_ascii=False
    )


def namespace_suffix(namespace: str) -> str:
    """The text every namespaced key of ``namespace`` ends with (for indexed scans)."""
    return ',"namespace":' + json.dumps(namespace, ensure_ascii=False) + "}"


def parse_namespaced_key(text: str) -> tuple[str, str] | None:
    """``(namespace, key)`` of a namespaced key, or None for any other key.

    >>> parse_namespaced_key('{"key":"job.name","namespace":"set-config"}')
    ('set-config', 'job.name')
    """
    if not text.startswith('{"key":'):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    key, namespace = value.get("key"), value.get("namespace")
    if isinstance(key, str) and isinstance(namespace, str):
        return namespace, key
    return None


def check_key(key: object, store: str) -> str:
    """``key`` if it is a non-empty string, else MetadataStoreError naming ``store``."""
    if not isinstance(key, str) or not key:
        msg = f"{store}: keys must be non-empty strings, got {key!r}"
        raise MetadataStoreError(msg)
    return key


def check_value(key: str, value: object, store: str) -> bytes:
    """``value`` as bytes, else MetadataStoreError naming the key and ``store``."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    msg = (
        f"{store}: the value of {key!r} must be bytes (encode JSON first), "
        f"got {type(value).__name__}"
    )
    raise MetadataStoreError(msg)


def generation_of(stored: bytes | None, store: str) -> int:
    """The job lease generation stored as ``stored`` (0 when missing)."""
    try:
        return 0 if stored is None else int(stored)
    except ValueError as error:
        msg = f"{store}: the job lease generation is not a number: {stored!r:.40}"
        raise MetadataStoreError(msg) from error


def check_fence(fence: Fence, stored: bytes | None, store: str) -> None:
    """Raise :class:`~samza_nb.errors.JobLeaseError` unless ``stored`` (the value under the
    fence key, None when missing) is the fence's generation."""
    generation = fence[1]
    current = generation_of(stored, store)
    if current != generation:
        msg = (
            f"{store}: fenced: this run holds generation {generation} of the job lease but "
            f"generation {current} is current (another run of the job took over); nothing "
            "was written"
        )
        raise JobLeaseError(msg)


class MetadataStore(ABC):
    """A small durable key → bytes store shared by the processors of a job.

    Stores are context managers (``with EmbeddedMetadataStore(path) as store: …``) that close
    on exit. ``put_all`` writes several entries; stores that can make it atomic do.
    """

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The value of ``key``, or None."""

    @abstractmethod
    def put(self, key: str, value: bytes) -> None:
        """Set ``key`` to ``value`` (last write wins)."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key``; removing a missing key does nothing."""

    @abstractmethod
    def all(self) -> dict[str, bytes]:
        """A snapshot of every entry."""

    def put_all(self, entries: Mapping[str, bytes], *, fence: Fence | None = None) -> None:
        """Write several entries (one after the other unless the store overrides it).

        With ``fence``, write only if the generation stored under the fence key is the given
        one, checked in the same transaction as the write, else raise
        :class:`~samza_nb.errors.JobLeaseError` and write nothing. Stores that cannot make the
        check atomic refuse a fence with MetadataStoreError.
        """
        if fence is not None:
            msg = f"{self!r} cannot check a job lease fence atomically with a write"
            raise MetadataStoreError(msg)
        for key, value in entries.items():
            self.put(key, value)

    def entries_in_namespace(self, namespace: str) -> dict[str, bytes]:
        """Entries whose key is a namespaced key of ``namespace``, keyed by the plain key.

        Stores with an index override this; the default scans :meth:`all`.
        """
        suffix = namespace_suffix(namespace)
        result: dict[str, bytes] = {}
        for raw, value in self.all().items():
            if raw.endswith(suffix):
                parsed = parse_namespaced_key(raw)
                if parsed is not None and parsed[0] == namespace:
                    result[parsed[1]] = value
        return result

    def flush(self) -> None:  # noqa: B027 - most stores write through; flushing is optional
        """Make earlier writes durable (a no-op for stores that write through)."""

    def release_session(self) -> None:  # noqa: B027 - most stores hold no session
        """The job ended: end a session the store holds (ZooKeeper's) until its next call,
        which opens one again. The store stays usable."""

    def close(self) -> None:  # noqa: B027 - stores without resources have nothing to close
        """Release the store's resources."""

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
