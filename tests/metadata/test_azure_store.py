"""AzureBlobMetadataStore against Azurite: one block blob per key, reversible names, etags."""

from __future__ import annotations

import pytest

from samza_nb import drain
from samza_nb.config import Config
from samza_nb.coordination.assignments import TaskAssignmentManager
from samza_nb.errors import CommitConflictError, ConfigError, JobLeaseError, MetadataStoreError
from samza_nb.metadata import NamespacedMetadataStore, get_metadata_store, namespaced_key
from samza_nb.metadata.azure import (
    AzureBlobMetadataStore,
    ConditionFailed,
    blob_name_of,
    key_of_blob,
)
from samza_nb.metadata.azure_storage import AzureAccount, container_name, table_name
from samza_nb.model import TaskMode

pytestmark = pytest.mark.services


@pytest.fixture
def store(azure_connection_string: str, azure_container: str):
    with AzureBlobMetadataStore(AzureAccount(azure_connection_string), azure_container) as s:
        yield s


def test_read_after_write_last_write_wins_delete_and_missing_key(
    store: AzureBlobMetadataStore,
) -> None:
    assert store.get("missing") is None
    store.put("k", b"v1")
    assert store.get("k") == b"v1"
    store.put("k", b"v2")
    store.put("empty", b"")
    assert store.get("k") == b"v2" and store.get("empty") == b""
    store.delete("k")
    store.delete("k")  # deleting a missing key does nothing
    assert store.get("k") is None
    assert store.all() == {"empty": b""}


def test_all_returns_the_original_keys(store: AzureBlobMetadataStore) -> None:
    keys = [
        "plain",
        "a/b/c",
        "ends.with.dot.",
        "with space",
        "ünïcödé ✓ 日本",
        ".",
        "..",
        "100%",
        "%2F",
        "back\\slash",
        namespaced_key("set-config", "job.name"),
        namespaced_key("taskLocality", "SystemStreamPartition [kafka, in/x, 0]"),
    ]
    expected = {key: f"value of {key}".encode() for key in keys}
    store.put_all(expected)
    assert store.all() == expected
    for key in keys:
        assert key_of_blob(blob_name_of(key)) == key
        assert not blob_name_of(key).endswith((".", "/"))
    assert store.entries_in_namespace("set-config") == {"job.name": expected[keys[-2]]}


def test_conditional_writes_refuse_a_changed_blob(store: AzureBlobMetadataStore) -> None:
    etag = store.put_if("n", b"1", None)
    with pytest.raises(ConditionFailed):
        store.put_if("n", b"x", None)  # it exists now
    value, read_etag = store.read("n")
    assert value == b"1" and read_etag == etag
    store.put_if("n", b"2", etag)
    with pytest.raises(ConditionFailed, match="changed since it was read"):
        store.put_if("n", b"3", etag)  # a stale etag: someone wrote in between
    assert store.get("n") == b"2"


def test_fenced_put_all_checks_the_generation(store: AzureBlobMetadataStore) -> None:
    store.put("gen", b"2")
    store.put_all({"a": b"1"}, fence=("gen", 2))
    store.put("gen", b"3")
    with pytest.raises(JobLeaseError, match="generation 3 is current"):
        store.put_all({"b": b"1"}, fence=("gen", 2))
    assert store.get("b") is None and store.get("a") == b"1"


def test_a_guard_that_fences_writes_nothing(store: AzureBlobMetadataStore) -> None:
    def guard(conditions) -> None:
        conditions.require_token("p1", None, "processor p1")

    with pytest.raises(JobLeaseError, match="processor p1"):
        store.put_all({"c": b"1"}, guard=guard)
    assert store.get("c") is None


def test_a_guarded_write_after_the_fence_check_never_overwrites_a_newer_owners_write(
    store: AzureBlobMetadataStore, azure_connection_string: str, azure_container: str
) -> None:
    # The frozen processor's store passed its fence check, then froze; the task's new owner
    # wrote the checkpoint meanwhile. On waking, the stale write must not land.
    def live_lease(_conditions) -> None:
        pass  # the check passed before the freeze: nothing left to verify

    with AzureBlobMetadataStore(AzureAccount(azure_connection_string), azure_container) as owner:
        store.put("checkpoint", b"seq 1")
        assert store.get("checkpoint") == b"seq 1"
        owner.put("checkpoint", b"seq 3")
        assert store.all()["checkpoint"] == b"seq 3"  # a listing does not renew what it read
        with pytest.raises(CommitConflictError, match="'checkpoint' was written by another") as raised:
            store.put_all({"checkpoint": b"seq 2"}, guard=live_lease)
        assert raised.value.key == "checkpoint" and isinstance(raised.value, JobLeaseError)
        assert owner.get("checkpoint") == b"seq 3"
        # A key read as missing that someone created since is refused the same way, and so is
        # a JobLease's fenced write; the commit is one write: no key of it is written.
        assert store.get("plan") is None
        owner.put("plan", b"owner's plan")
        store.put("gen", b"1")
        with pytest.raises(CommitConflictError, match="'plan'"):
            store.put_all({"first": b"1", "plan": b"stale plan", "last": b"1"}, fence=("gen", 1))
        assert owner.get("plan") == b"owner's plan"
        assert owner.get("first") is None and owner.get("last") is None
        # A write whose bytes are already there (its response was lost and the client retried
        # it) is not a conflict.
        owner.put("checkpoint", b"seq 2")
        store.put_all({"checkpoint": b"seq 2"}, guard=live_lease)
        owner.put("checkpoint", b"seq 3")
        # Read again, the key is written; an unguarded write never asks.
        assert store.get("checkpoint") == b"seq 3"
        store.put_all({"checkpoint": b"seq 4"}, guard=live_lease)
        owner.put("checkpoint", b"seq 5")
        store.put_all({"checkpoint": b"seq 6"})
        assert owner.get("checkpoint") == b"seq 6"


def test_a_fenced_commit_is_one_write_that_every_store_reads(
    store: AzureBlobMetadataStore, azure_connection_string: str, azure_container: str
) -> None:
    checkpoint = namespaced_key("checkpoint", "Partition 0")
    store.put(checkpoint, b"seq 1")  # a plain write first: its blob is taken over by the commit
    store.register_fence("p1", "lease-1")
    store.put_all({checkpoint: b"seq 2", "plan": b"p"}, guard=lambda g: g.require_token("p1", "lease-1", "p1"))
    with AzureBlobMetadataStore(AzureAccount(azure_connection_string), azure_container) as other:
        assert other.get(checkpoint) == b"seq 2" and other.get("plan") == b"p"
        assert other.entries_in_namespace("checkpoint") == {"Partition 0": b"seq 2"}
        assert other.all() == {checkpoint: b"seq 2", "plan": b"p"}
        other.put("plan", b"q")  # a plain write of a committed key goes to the commit blob
        assert store.get("plan") == b"q"
        value, etag = other.read("plan")  # and so does a conditional one, with its version
        other.put_if("plan", b"r", etag)
        with pytest.raises(ConditionFailed, match="changed since it was read"):
            store.put_if("plan", b"s", etag)
        assert (value, store.get("plan")) == (b"q", b"r")
        other.delete("plan")
        assert store.get("plan") is None and "plan" not in store.all()
        # Revoking someone else's token does nothing; revoking p1's fences it out.
        other.revoke_fence("p1", "lease-0")
        store.put_all({checkpoint: b"seq 3"}, guard=lambda g: g.require_token("p1", "lease-1", "p1"))
        other.revoke_fence("p1", "lease-1")
        assert store.fence_token("p1") is None
        with pytest.raises(JobLeaseError, match=r"^p1: the fencing lease is no longer held .*nothing was written$"):
            store.put_all({checkpoint: b"seq 4"}, guard=lambda g: g.require_token("p1", "lease-1", "p1"))
        assert other.get(checkpoint) == b"seq 3"


def test_drain_run_ids_and_assignments_work_unchanged(store: AzureBlobMetadataStore) -> None:
    NamespacedMetadataStore(store, drain.CONFIG_NAMESPACE).put("app.run.id", b"run-7")
    assert drain.read_run_id(store) == "run-7"
    drain.write_drain_notification(store)
    other = AzureBlobMetadataStore(store.account, store.container)
    assert drain.should_drain(other, "run-7")
    assert not drain.should_drain(other, "run-8")
    TaskAssignmentManager(store).write_task_container_mappings(
        {"0": {"Partition 0": TaskMode.ACTIVE}, "1": {"Partition 1": TaskMode.STANDBY}}
    )
    assert TaskAssignmentManager(other).read_task_assignment() == {
        "Partition 0": "0",
        "Partition 1": "1",
    }
    assert drain.cleanup(other, "run-7") == 1
    assert not drain.should_drain(store, "run-7")
    other.close()


def test_registry_names_the_container_from_the_job(azure_connection_string: str) -> None:
    config = Config({"app.name": "Az_Store.Test", "azure.storage.connect": azure_connection_string})
    store = get_metadata_store("azure", config)
    try:
        assert isinstance(store, AzureBlobMetadataStore)
        assert store.container == container_name("samza-nb-", "app-Az_Store.Test-1")
        store.put("k", b"v")
        assert get_metadata_store("azure", config).get("k") == b"v"
        assert "AccountKey" not in repr(store) and azure_connection_string not in repr(store)
    finally:
        store.delete_container()
        store.close()


def test_names_follow_azures_rules() -> None:
    for ident in ("x", "A" * 200, "a--b__c..d", "-lead-and-trail-"):
        name = container_name("samzacontainer", ident)
        assert 3 <= len(name) <= 63 and name == name.lower() and "--" not in name
        assert name[0].isalnum() and name[-1].isalnum()
        table = table_name("samzatable", ident)
        assert 3 <= len(table) <= 63 and table.isalnum() and table[0].isalpha()
    # Truncated names stay distinct.
    assert container_name("p", "a" * 100 + "1") != container_name("p", "a" * 100 + "2")
    assert table_name("t", "a" * 100 + "1") != table_name("t", "a" * 100 + "2")


def test_no_connection_string_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAMZA_NB_AZURE_CONNECTION_STRING", raising=False)
    with pytest.raises(ConfigError, match=r"azure\.storage\.connect"):
        get_metadata_store("azure", {"app.name": "x"})


@pytest.mark.parametrize("source", ["config", "environment"])
def test_a_malformed_connection_string_names_its_setting_and_not_its_secret(
    monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    malformed = "AccountKey=SecretABC123;AccountName"
    config = {"app.name": "x"}
    if source == "config":
        monkeypatch.delenv("SAMZA_NB_AZURE_CONNECTION_STRING", raising=False)
        config["azure.storage.connect"] = malformed
        setting = "azure.storage.connect"
    else:
        monkeypatch.setenv("SAMZA_NB_AZURE_CONNECTION_STRING", malformed)
        setting = "$SAMZA_NB_AZURE_CONNECTION_STRING"
    with pytest.raises(ConfigError) as refused:
        get_metadata_store("azure", config)
    assert f"from {setting} does not parse" in str(refused.value)
    assert "SecretABC123" not in str(refused.value)


def test_an_unreachable_account_fails_after_bounded_retries_without_the_key() -> None:
    secret = "AccountKey=c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"
    connect = f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;{secret};BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;"
    account = AzureAccount(connect, retry_attempts=2, retry_interval=0.1, timeout=2.0)
    with pytest.raises(MetadataStoreError) as failed:
        AzureBlobMetadataStore(account, "unreachable")
    assert "127.0.0.1:1" in str(failed.value)
    assert "c2VjcmV0" not in str(failed.value) and "c2VjcmV0" not in repr(account)
