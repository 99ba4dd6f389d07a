"""JobHomeGuard: a lost metadata store is refused while the job's data remain."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from samza_nb.errors import MetadataStoreError
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.metadata.incarnation import INCARNATION_KEY, JobHomeGuard


def _store(home: Path) -> EmbeddedMetadataStore:
    return EmbeddedMetadataStore(home / "metadata.sqlite3")


def test_a_fresh_job_home_gets_one_incarnation_that_lasts(tmp_path: Path) -> None:
    home = tmp_path / "jobs" / "app-1"
    with _store(home) as store:
        first = JobHomeGuard(home, store).check()
        again = JobHomeGuard(home, store).check(["changelog stream app-1-counts-changelog"])
    assert first.new and not again.new and again.id == first.id
    assert stat.S_IMODE(os.stat(home / "incarnation.json").st_mode) == 0o600


def test_a_deleted_metadata_store_is_refused_naming_what_remains(tmp_path: Path) -> None:
    home = tmp_path / "app-1"
    with _store(home) as store:
        JobHomeGuard(home, store).check()
    for suffix in ("", "-wal", "-shm"):
        (home / f"metadata.sqlite3{suffix}").unlink(missing_ok=True)
    with _store(home) as store, pytest.raises(MetadataStoreError) as refused:
        JobHomeGuard(home, store).check(["store folder /x/Partition 0/counts"])
    message = str(refused.value)
    assert "has lost its records" in message
    assert str(home / "incarnation.json") in message and "store folder /x/Partition 0/counts" in message
    assert "samza-nb reset MODULE:APP" in message
    with _store(home) as store:
        assert store.get(INCARNATION_KEY) is None  # nothing adopted


def test_a_deleted_job_home_with_data_left_elsewhere_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "app-1"
    found = ["intermediate stream app-1-partition_by-by-page (120 messages)"]
    with _store(home) as store, pytest.raises(MetadataStoreError, match=r"by-page \(120 messages\)"):
        JobHomeGuard(home, store).check(found)


def test_a_store_of_another_incarnation_is_refused(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    with _store(one) as store_one, _store(two) as store_two:
        JobHomeGuard(one, store_one).check()
        JobHomeGuard(two, store_two).check()
        with pytest.raises(MetadataStoreError, match="belongs to incarnation"):
            JobHomeGuard(one, store_two).check()


def test_a_lost_marker_file_is_written_again(tmp_path: Path) -> None:
    home = tmp_path / "app-1"
    with _store(home) as store:
        first = JobHomeGuard(home, store).check()
        (home / "incarnation.json").unlink()
        assert JobHomeGuard(home, store).check().id == first.id
    assert (home / "incarnation.json").exists()


def test_a_corrupt_marker_is_a_metadata_store_error(tmp_path: Path) -> None:
    home = tmp_path / "app-1"
    with _store(home) as store:
        JobHomeGuard(home, store).check()
        (home / "incarnation.json").write_text("{not json")
        with pytest.raises(MetadataStoreError, match="incarnation record is unreadable"):
            JobHomeGuard(home, store).check()
