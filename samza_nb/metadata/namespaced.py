"""NamespacedMetadataStore: one namespace of a shared store (SAMZA.md §7.4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from samza_nb.errors import MetadataStoreError
from samza_nb.metadata.base import Fence, MetadataStore, check_key, namespaced_key

__all__ = ["NamespacedMetadataStore"]


class NamespacedMetadataStore(MetadataStore):
    """A view of ``store`` restricted to ``namespace``.

    Keys are stored as Samza's namespaced-key JSON ``{"key":k,"namespace":ns}``, so views of
    different namespaces never collide and a coordinator-stream backend can map them to
    Samza's ``[1, namespace, key]`` message keys. ``close`` does nothing: the wrapped store's
    owner closes it.

    >>> from samza_nb.metadata import InMemoryMetadataStore
    >>> store = InMemoryMetadataStore()
    >>> config = NamespacedMetadataStore(store, "set-config")
    >>> config.put("job.name", b'"wordcount"')
    >>> config.all()
    {'job.name': b'"wordcount"'}
    >>> list(store.all())
    ['{"key":"job.name","namespace":"set-config"}']
    """

    def __init__(self, store: MetadataStore, namespace: str) -> None:
        if not isinstance(store, MetadataStore):
            msg = f"NamespacedMetadataStore needs a MetadataStore, got {type(store).__name__}"
            raise MetadataStoreError(msg)
        if not isinstance(namespace, str) or not namespace:
            msg = (
                f"NamespacedMetadataStore: namespace must be a non-empty string, got {namespace!r}"
            )
            raise MetadataStoreError(msg)
        self.store = store
        self.namespace = namespace

    def __repr__(self) -> str:
        return f"NamespacedMetadataStore({self.store!r}, {self.namespace!r})"

    def _key(self, key: str) -> str:
        return namespaced_key(self.namespace, check_key(key, f"namespace {self.namespace!r}"))

    def get(self, key: str) -> bytes | None:
        return self.store.get(self._key(key))

    def put(self, key: str, value: bytes) -> None:
        self.store.put(self._key(key), value)

    def put_all(
        self, entries: Mapping[str, bytes], *, fence: Fence | None = None, **options: Any
    ) -> None:
        """The fence key is a key of the underlying store, not of this namespace; ``options``
        (a ZooKeeper ``guard``) go to the underlying store."""
        self.store.put_all(
            {self._key(key): value for key, value in entries.items()}, fence=fence, **options
        )

    def delete(self, key: str) -> None:
        self.store.delete(self._key(key))

    def all(self) -> dict[str, bytes]:
        return self.store.entries_in_namespace(self.namespace)

    def flush(self) -> None:
        self.store.flush()

    def close(self) -> None:
        """Nothing to do: the wrapped store's lifecycle belongs to its owner."""
