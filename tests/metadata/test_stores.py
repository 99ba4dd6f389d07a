"""InMemoryMetadataStore, NamespacedMetadataStore (Samza's key form) and the store registry."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from samza_nb.errors import ConfigError, MetadataStoreError
from samza_nb.metadata import (
    EmbeddedMetadataStore,
    InMemoryMetadataStore,
    MetadataStore,
    NamespacedMetadataStore,
    get_metadata_store,
    metadata_store_names,
    namespaced_key,
    parse_namespaced_key,
    register_metadata_store,
)


def test_in_memory_behaves_like_samzas() -> None:
    store = InMemoryMetadataStore()
    store.put("a", b"1")
    snapshot = store.all()
    store.put("a", b"2")
    assert snapshot == {"a": b"1"}  # all() is a copy
    assert store.get("a") == b"2"
    store.delete("a")
    assert store.get("a") is None and store.all() == {}
    with pytest.raises(MetadataStoreError, match="must be bytes"):
        store.put("a", None)  # type: ignore[arg-type]


def test_in_memory_is_thread_safe() -> None:
    store = InMemoryMetadataStore()

    def write(prefix: str) -> None:
        for i in range(500):
            store.put(f"{prefix}{i}", b"v")

    threads = [threading.Thread(target=write, args=(p,)) for p in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.all()) == 2000


def test_shared_in_memory_stores() -> None:
    assert InMemoryMetadataStore.shared("x") is InMemoryMetadataStore.shared("x")
    assert InMemoryMetadataStore.shared("x") is not InMemoryMetadataStore.shared("y")
    assert get_metadata_store("in-memory", shared="x") is InMemoryMetadataStore.shared("x")


def test_namespaced_key_is_samzas_json() -> None:
    assert namespaced_key("set-config", "job.name") == '{"key":"job.name","namespace":"set-config"}'
    assert parse_namespaced_key('{"key":"k","namespace":"n"}') == ("n", "k")
    assert parse_namespaced_key("plain") is None
    assert parse_namespaced_key('{"key":1}') is None


def test_namespaced_view_reads_only_its_namespace() -> None:
    store = InMemoryMetadataStore()
    store.put("plain", b"0")
    a, b = NamespacedMetadataStore(store, "a"), NamespacedMetadataStore(store, "b")
    a.put("k", b"1")
    a.put_all({"j": b"2"})
    b.put("k", b"3")
    assert a.all() == {"k": b"1", "j": b"2"} and b.all() == {"k": b"3"}
    a.delete("k")
    assert a.get("k") is None and b.get("k") == b"3"
    a.close()  # closing a view leaves the shared store usable
    assert store.get("plain") == b"0"
    with pytest.raises(MetadataStoreError, match="namespace"):
        NamespacedMetadataStore(store, "")


def test_registry(tmp_path: Path) -> None:
    assert metadata_store_names() == ["azure", "embedded", "in-memory", "kafka", "zookeeper"]
    store = get_metadata_store("embedded", path=tmp_path / "m.sqlite3")
    assert isinstance(store, EmbeddedMetadataStore)
    store.close()
    from_home = get_metadata_store(config={"job.home": str(tmp_path / "home")})
    assert isinstance(from_home, EmbeddedMetadataStore)
    assert from_home.path == tmp_path / "home" / "metadata.sqlite3"
    from_home.close()
    with pytest.raises(ConfigError, match="needs a path"):
        get_metadata_store("embedded")
    with pytest.raises(ConfigError, match="job.coordinator.zk.connect' is required"):
        get_metadata_store("zookeeper")
    with pytest.raises(ConfigError, match="known: azure, embedded, in-memory, kafka, zookeeper"):
        get_metadata_store("zookeper-x")
    with pytest.raises(ConfigError, match="bad options"):
        get_metadata_store("in-memory", colour="red")


def test_registering_a_backend() -> None:
    class Dict(InMemoryMetadataStore):
        pass

    register_metadata_store("test-dict", lambda config, **options: Dict())
    assert isinstance(get_metadata_store("test-dict"), Dict)
    assert isinstance(get_metadata_store("test-dict"), MetadataStore)


def test_every_store_is_exported_from_the_package_without_loading_service_clients() -> None:
    import subprocess
    import sys

    code = (
        "import sys, samza_nb.metadata as m\n"
        "assert not {'kazoo', 'confluent_kafka', 'azure.storage.blob'} & set(sys.modules)\n"
        "from samza_nb.metadata import AzureBlobMetadataStore, CoordinatorStreamMetadataStore, ZkMetadataStore\n"
        "assert all(issubclass(c, m.MetadataStore) for c in (AzureBlobMetadataStore, CoordinatorStreamMetadataStore, ZkMetadataStore))\n"
        "assert set(m.__all__) >= {'ZkMetadataStore', 'AzureBlobMetadataStore', 'CoordinatorStreamMetadataStore'}\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
