"""Metadata stores: small durable key → bytes stores shared by a job's processors (§7).

Checkpoints, locality, assignments, run ids and drain notifications live here. The embedded
SQLite store is the default; ZooKeeper, Kafka and Azure stores plug into the registry in later
issues. Values are JSON bytes, never pickles.
"""

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

__all__ = [
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
]
