"""Store locality: per location, the tasks whose stores a processor there reported holding."""

from __future__ import annotations

import json

import pytest

from samza_nb.coordination import (
    STORE_LOCALITY_NAMESPACE,
    StoreLocality,
    grouper_metadata_from_store,
)
from samza_nb.errors import MetadataStoreError
from samza_nb.metadata import InMemoryMetadataStore, namespaced_key
from samza_nb.model import TaskMode


def test_reports_are_read_per_location_within_their_run_id() -> None:
    store = InMemoryMetadataStore()
    locality = StoreLocality(store)
    locality.record("host-a", {"Partition 1": 2, "Partition 0": 2}, run_id="r1", processor_id="0")
    locality.record("host-b", {"Partition 0": 7}, run_id="r1", processor_id="1")
    locality.record("host-c", {"Partition 0": 7}, run_id="r1", processor_id="2", mode=TaskMode.STANDBY)
    locality.record("host-z", {"Partition 0": 1}, run_id="r0", processor_id="9")
    assert locality.read("r1") == {
        "host-a": {"Partition 0": 2, "Partition 1": 2},
        "host-b": {"Partition 0": 7},
        "host-c": {"Partition 0": 7},
    }
    assert locality.read("r0") == {"host-z": {"Partition 0": 1}}
    # A later stint at the same location replaces the earlier report.
    locality.record("host-a", {"Partition 0": 9}, run_id="r1", processor_id="3")
    assert locality.read("r1")["host-a"] == {"Partition 0": 9, "Partition 1": 2}
    raw = json.loads(store.get(namespaced_key(STORE_LOCALITY_NAMESPACE, '["host-c","Partition 0"]')) or b"")
    assert raw["mode"] == "Standby" and raw["processorId"] == "2" and raw["runId"] == "r1"


def test_grouper_metadata_from_store_carries_the_run_ids_reports() -> None:
    store = InMemoryMetadataStore()
    StoreLocality(store).record("host-a", {"Partition 0": 3}, run_id="r1", processor_id="0")
    assert grouper_metadata_from_store(store, {"1": "host-b"}, run_id="r1").store_locality == {
        "host-a": {"Partition 0": 3}
    }
    assert grouper_metadata_from_store(store, {"1": "host-b"}).store_locality == {}


def test_an_unreadable_report_names_the_namespace_and_key() -> None:
    store = InMemoryMetadataStore()
    store.put(namespaced_key(STORE_LOCALITY_NAMESPACE, '["host-a","Partition 0"]'), b"{not json")
    with pytest.raises(MetadataStoreError, match=r"samza-nb-store-locality-v1.*Partition 0.*not JSON"):
        StoreLocality(store).read("r1")
    store.put(namespaced_key(STORE_LOCALITY_NAMESPACE, '["host-a","Partition 0"]'), b'{"runId":"r1"}')
    with pytest.raises(MetadataStoreError, match=r"no integer 'epoch'"):
        StoreLocality(store).read("r1")
    store = InMemoryMetadataStore()
    store.put(namespaced_key(STORE_LOCALITY_NAMESPACE, "host-a/Partition 0"), b'{"runId":"r1","epoch":1}')
    with pytest.raises(MetadataStoreError, match=r"key 'host-a/Partition 0' is not \[\"<location id>\", \"<task name>\"\]"):
        StoreLocality(store).read("r1")
