"""Metadata stores: small durable key → bytes stores shared by a job's processors (§7).

Checkpoints, locality, assignments, run ids and drain notifications live here. The embedded
SQLite store is the default; the ZooKeeper, Kafka and Azure stores are importable from here too
(loaded on first use, so that importing this package needs none of their clients). Values are
JSON bytes, never pickles.
"""

from importlib import import_module
from typing import Any

from samza_nb.metadata.base import MetadataStore, namespaced_key, parse_namespaced_key
from samza_nb.metadata.embedded import EmbeddedMetadataStore
from samza_nb.metadata.in_memory import InMemoryMetadataStore
from samza_nb.metadata.incarnation import Incarnation, JobHomeGuard
from samza_nb.metadata.namespaced import NamespacedMetadataStore
from samza_nb.metadata.registry import (
    get_metadata_store,
    metadata_store_names,
    register_metadata_store,
)

#: The stores whose modules import a service's client, loaded when first named.
_SERVICE_STORES = {
    "AzureBlobMetadataStore": "samza_nb.metadata.azure",
    "CoordinatorStreamMetadataStore": "samza_nb.metadata.kafka",
    "ZkMetadataStore": "samza_nb.metadata.zookeeper",
}

__all__ = [
    "AzureBlobMetadataStore",
    "CoordinatorStreamMetadataStore",
    "EmbeddedMetadataStore",
    "InMemoryMetadataStore",
    "Incarnation",
    "JobHomeGuard",
    "MetadataStore",
    "NamespacedMetadataStore",
    "get_metadata_store",
    "metadata_store_names",
    "namespaced_key",
    "parse_namespaced_key",
    "register_metadata_store",
    "ZkMetadataStore",
]


def __getattr__(name: str) -> Any:
    module = _SERVICE_STORES.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(import_module(module), name)
