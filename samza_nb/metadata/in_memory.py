"""InMemoryMetadataStore: a thread-safe dict (SAMZA.md §7.2), for tests and one-process jobs."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import ClassVar

from samza_nb.metadata.base import Fence, MetadataStore, check_fence, check_key, check_value

__all__ = ["InMemoryMetadataStore"]


class InMemoryMetadataStore(MetadataStore):
    """Entries live in this process only; :meth:`shared` gives one instance per name.

    >>> store = InMemoryMetadataStore()
    >>> store.put("a", b"1")
    >>> store.get("a"), store.get("b")
    (b'1', None)
    >>> InMemoryMetadataStore.shared("jobs") is InMemoryMetadataStore.shared("jobs")
    True
    """

    _shared: ClassVar[dict[str, InMemoryMetadataStore]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._entries: dict[str, bytes] = {}
        self._lock = threading.Lock()

    @classmethod
    def shared(cls, name: str = "default") -> InMemoryMetadataStore:
        """The process-wide store called ``name`` (Samza's factory shares stores this way)."""
        with cls._shared_lock:
            store = cls._shared.get(name)
            if store is None:
                store = cls._shared[name] = cls()
            return store

    def __repr__(self) -> str:
        return f"InMemoryMetadataStore({len(self._entries)} entries)"

    def get(self, key: str) -> bytes | None:
        with self._lock:
            return self._entries.get(check_key(key, "InMemoryMetadataStore"))

    def put(self, key: str, value: bytes) -> None:
        key = check_key(key, "InMemoryMetadataStore")
        data = check_value(key, value, "InMemoryMetadataStore")
        with self._lock:
            self._entries[key] = data

    def put_all(self, entries: Mapping[str, bytes], *, fence: Fence | None = None) -> None:
        checked = {
            check_key(key, "InMemoryMetadataStore"): check_value(
                key, value, "InMemoryMetadataStore"
            )
            for key, value in entries.items()
        }
        with self._lock:
            if fence is not None:
                check_fence(fence, self._entries.get(fence[0]), "InMemoryMetadataStore")
            self._entries.update(checked)

    def delete(self, key: str) -> None:
        with self._lock:
            self._entries.pop(check_key(key, "InMemoryMetadataStore"), None)

    def all(self) -> dict[str, bytes]:
        with self._lock:
            return dict(self._entries)
