"""EmbeddedMetadataStore: durable, namespaced, and safe for several processes at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from samza_nb.errors import MetadataStoreError
from samza_nb.metadata import EmbeddedMetadataStore, NamespacedMetadataStore


def test_read_write_delete_and_all(tmp_path: Path) -> None:
    with EmbeddedMetadataStore(tmp_path / "m.sqlite3") as store:
        assert store.get("missing") is None
        store.put("a", b"1")
        store.put("a", b"2")  # last write wins
        store.put("b", bytearray(b"3"))  # type: ignore[arg-type]
        assert store.get("a") == b"2"
        assert store.all() == {"a": b"2", "b": b"3"}
        store.delete("a")
        store.delete("a")  # deleting a missing key is fine
        assert store.get("a") is None and store.all() == {"b": b"3"}


def test_values_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "folder" / "m.sqlite3"
    with EmbeddedMetadataStore(path) as store:
        store.put_all({f"k{i}": str(i).encode() for i in range(100)})
        store.flush()
    with EmbeddedMetadataStore(path) as store:
        assert len(store.all()) == 100 and store.get("k42") == b"42"
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_namespaces_do_not_collide(tmp_path: Path) -> None:
    with EmbeddedMetadataStore(tmp_path / "m.sqlite3") as store:
        one, two = NamespacedMetadataStore(store, "one"), NamespacedMetadataStore(store, "two")
        one.put("k", b"1")
        two.put("k", b"2")
        two.put_all({"x": b"3", 'quote"d': b"4"})
        assert one.all() == {"k": b"1"}
        assert two.all() == {"k": b"2", "x": b"3", 'quote"d': b"4"}
        assert two.get('quote"d') == b"4"
        two.delete("k")
        assert two.get("k") is None and one.get("k") == b"1"
        assert '{"key":"k","namespace":"one"}' in store.all()


def test_bad_keys_and_values_are_named(tmp_path: Path) -> None:
    with EmbeddedMetadataStore(tmp_path / "m.sqlite3") as store:
        with pytest.raises(MetadataStoreError, match="must be bytes"):
            store.put("k", "text")  # type: ignore[arg-type]
        with pytest.raises(MetadataStoreError, match="non-empty strings"):
            store.put("", b"1")


def test_closed_store_fails_with_its_path(tmp_path: Path) -> None:
    store = EmbeddedMetadataStore(tmp_path / "m.sqlite3")
    store.close()
    store.close()
    with pytest.raises(MetadataStoreError, match=r"m\.sqlite3.*closed"):
        store.get("a")


def test_a_database_locked_too_long_fails_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    store = EmbeddedMetadataStore(path, timeout=0.05, retries=2)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(MetadataStoreError, match=r"m\.sqlite3.*put 'a'.*busy after 3 attempts"):
            store.put("a", b"1")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    store.put("a", b"1")
    assert store.get("a") == b"1"
    store.close()


def test_a_file_that_is_not_a_database_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(MetadataStoreError, match=r"m\.sqlite3"):
        EmbeddedMetadataStore(path)


COUNT = 600


def _writer(path: str, name: str, count: int) -> int:
    """Write ``count`` keys (some in batches) and read the other writer's keys meanwhile."""
    seen = 0
    with EmbeddedMetadataStore(path) as store:
        view = NamespacedMetadataStore(store, "shared")
        for i in range(0, count, 3):
            store.put(f"{name}-{i}", f"{name}:{i}".encode())
            view.put_all({f"{name}-{i + 1}": b"x", f"{name}-{i + 2}": b"y"})
            seen = max(seen, len(store.all()) + len(view.all()))
            store.get(f"{'b' if name == 'a' else 'a'}-{i}")
    return seen


def test_two_processes_writing_and_reading_concurrently_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    EmbeddedMetadataStore(path).close()
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        results = [pool.apply_async(_writer, (path, name, COUNT)) for name in ("a", "b")]
        seen = [result.get(timeout=120) for result in results]
    assert all(count > 0 for count in seen)
    with EmbeddedMetadataStore(path) as store:
        plain = store.all()
        shared = NamespacedMetadataStore(store, "shared").all()
    for name in ("a", "b"):
        for i in range(0, COUNT, 3):
            assert plain[f"{name}-{i}"] == f"{name}:{i}".encode()
            assert shared[f"{name}-{i + 1}"] == b"x" and shared[f"{name}-{i + 2}"] == b"y"
    assert len(plain) - len(shared) == 2 * COUNT // 3
