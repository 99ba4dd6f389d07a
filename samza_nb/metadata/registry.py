"""Metadata stores by name (``metadata.store.factory``); an unknown name lists the known ones.

"embedded", "in-memory", "kafka" (the coordinator stream, samza_nb.metadata.kafka),
"zookeeper" and "azure" (block blobs, samza_nb.metadata.azure) are built in.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from samza_nb.config import Config, global_app_id
from samza_nb.errors import ConfigError
from samza_nb.metadata.base import MetadataStore
from samza_nb.metadata.embedded import EmbeddedMetadataStore
from samza_nb.metadata.in_memory import InMemoryMetadataStore

__all__ = ["check_metadata_store_name", "get_metadata_store", "metadata_store_names", "register_metadata_store"]

#: ``factory(config, **options)`` builds a store.
MetadataStoreFactory = Callable[..., MetadataStore]

#: The folder of the ZooKeeper store below ``/<globalAppId>`` (Samza's CoordinationConstants).
ZK_BASE_DIR = "ApplicationRunnerData"

#: The file name of the embedded store inside ``job.home``.
EMBEDDED_FILE_NAME = "metadata.sqlite3"


def _embedded(config: Config, path: str | Path | None = None, **options: Any) -> MetadataStore:
    if path is None:
        home = config.get_str("job.home")
        if not home:
            msg = (
                "the embedded metadata store needs a path: pass path=... or set job.home "
                f"(the store is then {{job.home}}/{EMBEDDED_FILE_NAME})"
            )
            raise ConfigError(msg)
        path = Path(home).expanduser() / EMBEDDED_FILE_NAME
    return EmbeddedMetadataStore(path, **options)


def _in_memory(config: Config, shared: str | None = None) -> MetadataStore:
    return InMemoryMetadataStore() if shared is None else InMemoryMetadataStore.shared(shared)


def _kafka(config: Config, **options: Any) -> MetadataStore:
    from samza_nb.metadata.kafka import CoordinatorStreamMetadataStore

    return CoordinatorStreamMetadataStore.from_config(config, **options)


def _zookeeper(
    config: Config, connect: str | None = None, base_path: str | None = None, **options: Any
) -> MetadataStore:
    # Imported here: kazoo is only needed by jobs that use ZooKeeper.
    from samza_nb.metadata.zookeeper import ZkMetadataStore

    connect = connect or config.require("job.coordinator.zk.connect")
    if base_path is None:
        base_path = f"/{global_app_id(config)}/{ZK_BASE_DIR}"
    options.setdefault("session_timeout", config.get_int("job.coordinator.zk.session.timeout.ms") / 1000)
    options.setdefault(
        "connection_timeout", config.get_int("job.coordinator.zk.connection.timeout.ms") / 1000
    )
    return ZkMetadataStore(connect, base_path, **options)


def _azure(config: Config, connect: str | None = None, container: str | None = None) -> MetadataStore:
    # Imported here: the Azure SDK is only needed by jobs that use Azure.
    from samza_nb.metadata.azure import AzureBlobMetadataStore
    from samza_nb.metadata.azure_storage import AzureAccount

    if container is None:
        return AzureBlobMetadataStore.for_job(config, connect=connect)
    return AzureBlobMetadataStore(AzureAccount.from_config(config, connect), container)


_STORES: dict[str, MetadataStoreFactory] = {
    "azure": _azure,
    "embedded": _embedded,
    "in-memory": _in_memory,
    "kafka": _kafka,
    "zookeeper": _zookeeper,
}


def metadata_store_names() -> list[str]:
    """The registered metadata store names."""
    return sorted(_STORES)


def register_metadata_store(name: str, factory: MetadataStoreFactory) -> None:
    """Register a backend; ``factory(config, **options)`` builds the store."""
    if not isinstance(name, str) or not name:
        msg = f"metadata store name must be a non-empty string, got {name!r}"
        raise ConfigError(msg)
    _STORES[name] = factory


def get_metadata_store(
    name: str | None = None, config: Config | Mapping[str, Any] | None = None, **options: Any
) -> MetadataStore:
    """A metadata store by name (default: ``metadata.store.factory`` of ``config``).

    ``embedded`` takes ``path=`` (else ``{job.home}/metadata.sqlite3``), ``timeout=`` and
    ``retries=``; ``in-memory`` takes ``shared="name"`` to share one store in the process;
    ``kafka`` reads ``job.coordinator.system`` / ``job.coordinator.stream`` /
    ``job.coordinator.replication.factor`` and the system's ``systems.<name>.*`` keys, and takes
    ``timeout=``.
    ``zookeeper`` reads ``job.coordinator.zk.connect`` (or ``connect=``) and keeps its entries
    under ``/<globalAppId>/ApplicationRunnerData`` (or ``base_path=``), with the session and
    connection timeouts of ``job.coordinator.zk.*`` (or ``session_timeout=`` …, seconds).
    ``azure`` reads ``azure.storage.connect`` (or ``connect=``, else
    ``$SAMZA_NB_AZURE_CONNECTION_STRING``) and keeps one blob per key in the container named
    from the job (or ``container=``).

    >>> get_metadata_store("in-memory")
    InMemoryMetadataStore(0 entries)
    >>> get_metadata_store("zookeper")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    samza_nb.errors.ConfigError: unknown metadata store 'zookeper'; did you mean 'zookeeper'? known: ...
    """
    resolved = Config.of(config)
    store_name = name or resolved.get_str("metadata.store.factory") or "embedded"
    check_metadata_store_name(store_name)
    factory = _STORES[store_name]
    try:
        return factory(resolved, **options)
    except TypeError as error:
        msg = f"metadata store {store_name!r}: bad options {sorted(options)}: {error}"
        raise ConfigError(msg) from error


def check_metadata_store_name(name: str) -> None:
    """Raise ConfigError (with the nearest registered name) unless ``name`` is a metadata
    store."""
    if name not in _STORES:
        close = difflib.get_close_matches(name, list(_STORES), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        msg = f"unknown metadata store {name!r}; {hint}known: {', '.join(sorted(_STORES))}"
        raise ConfigError(msg)
