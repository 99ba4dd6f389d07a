"""ZkMetadataStore against the real ZooKeeper (SAMZA.md §7.5, with Samza's two bugs fixed)."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest
from kazoo.client import KazooClient

from samza_nb.config import Config
from samza_nb.errors import MetadataStoreError
from samza_nb.metadata import get_metadata_store, namespaced_key
from samza_nb.metadata.zk_client import split_connect
from samza_nb.metadata.zookeeper import SEGMENT_BYTES, ZkMetadataStore, decode_key, encode_key

pytestmark = pytest.mark.services


@pytest.fixture
def store(zk_connect: str):
    with ZkMetadataStore(zk_connect, "/app-test-1/ApplicationRunnerData", session_timeout=6) as s:
        yield s


@pytest.fixture
def raw(zk_connect: str):
    """A plain kazoo client inside the test's chroot, to look at the nodes themselves."""
    client = KazooClient(hosts=zk_connect, timeout=6)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def test_read_after_write_last_write_wins_and_missing_key(store: ZkMetadataStore) -> None:
    assert store.get("missing") is None
    store.put("k", b"v1")
    assert store.get("k") == b"v1"
    store.put("k", b"v2")
    assert store.get("k") == b"v2"
    store.put("empty", b"")
    assert store.get("empty") == b""


def test_read_after_delete(store: ZkMetadataStore) -> None:
    store.put("k", b"v")
    store.delete("k")
    assert store.get("k") is None
    assert store.all() == {}
    store.delete("k")  # deleting a missing key does nothing


def test_all_lists_every_key_with_weird_names(store: ZkMetadataStore) -> None:
    keys = [
        "plain",
        "a/b/c",
        "with space",
        "ünïcödé ✓ 日本",
        ".",
        "..",
        "100%",
        "%2F",
        "tab\tand\nnewline",
        "zookeeper",
        namespaced_key("set-config", "job.name"),
        namespaced_key("taskLocality", "SystemStreamPartition [kafka, in/x, 0]"),
    ]
    expected = {key: f"value of {key}".encode() for key in keys}
    store.put_all(expected)
    assert store.all() == expected
    for key in keys:
        assert store.get(key) == expected[key]
        assert decode_key(encode_key(key)) == key
    assert store.entries_in_namespace("set-config") == {"job.name": expected[keys[-2]]}


def test_a_namespace_is_listed_without_reading_the_values_of_the_others(
    store: ZkMetadataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A processor reads small namespaces (finished tasks, drain notifications) at every idle
    wait and drain poll: it must not read every checkpoint and epoch plan of the job to do so."""
    checkpoints = {namespaced_key("checkpoint", f"Partition {i}"): b"offsets" for i in range(20)}
    drain = namespaced_key("drain", "run-1")
    store.put_all({**checkpoints, drain: b"drain now", "plain": b"no namespace"})
    read: list[str] = []
    get = store._zk.get
    monkeypatch.setattr(store._zk, "get", lambda path, *args: read.append(path) or get(path, *args))
    assert store.entries_in_namespace("drain") == {"run-1": b"drain now"}
    assert read == [f"{store.base_path}/{encode_key(drain)}/0"]
    assert store.entries_in_namespace("nothing here") == {}
    assert len(store.entries_in_namespace("checkpoint")) == 20


def test_segments_layout_and_crc_trailer(store: ZkMetadataStore, raw: KazooClient) -> None:
    store.put("k", b"hello")
    path = f"{store.base_path}/k"
    assert raw.get_children(path) == ["0"]
    data, _ = raw.get(f"{path}/0")
    assert data[:-8] == b"hello"
    assert int.from_bytes(data[-8:], "big") == 0x3610A686  # zlib.crc32(b"hello")


def test_big_value_spans_segments_no_larger_than_the_limit(
    store: ZkMetadataStore, raw: KazooClient
) -> None:
    value = os.urandom(2_500_000)
    store.put("big", value)
    path = f"{store.base_path}/big"
    segments = sorted(raw.get_children(path), key=int)
    assert segments == ["0", "1", "2"]
    sizes = [len(raw.get(f"{path}/{name}")[0]) for name in segments]
    assert max(sizes) <= SEGMENT_BYTES == 1_000_000
    assert sum(sizes) == len(value) + 8
    assert store.get("big") == value


def test_shorter_value_deletes_stale_segments(store: ZkMetadataStore, raw: KazooClient) -> None:
    # Samza's bug: the stale segments 1 and 2 would stay and break the checksum of the next read.
    store.put("k", os.urandom(2_100_000))
    store.put("k", b"short")
    assert raw.get_children(f"{store.base_path}/k") == ["0"]
    assert store.get("k") == b"short"
    assert store.all() == {"k": b"short"}


def test_crc_mismatch_names_the_key(store: ZkMetadataStore, raw: KazooClient) -> None:
    key = namespaced_key("set-checkpoint", "Partition 0")
    store.put(key, b'{"offset": 1}')
    segment = f"{store.base_path}/{encode_key(key)}/0"
    data, _ = raw.get(segment)
    raw.set(segment, b'{"offset": 2}' + data[-8:])
    with pytest.raises(MetadataStoreError, match="Partition 0.*CRC32"):
        store.get(key)


def test_stores_in_one_chroot_share_entries(zk_connect: str, store: ZkMetadataStore) -> None:
    with ZkMetadataStore(zk_connect, store.base_path, session_timeout=6) as other:
        other.put("shared", b"1")
    assert store.get("shared") == b"1"


def test_registered_as_zookeeper_under_the_global_app_id(zk_connect: str, raw: KazooClient) -> None:
    config = Config({"app.name": "pageviews", "job.id": "7", "job.coordinator.zk.connect": zk_connect})
    with get_metadata_store("zookeeper", config, session_timeout=6) as store:
        store.put("k", b"v")
        assert store.base_path == "/app-pageviews-7/ApplicationRunnerData"
    assert raw.get_children("/app-pageviews-7/ApplicationRunnerData") == ["k"]


def test_missing_chroot_is_a_clear_error(zk_connect: str) -> None:
    hosts, _ = split_connect(zk_connect)
    with pytest.raises(MetadataStoreError, match="chroot '/no-such-chroot-x' does not exist"):
        ZkMetadataStore(f"{hosts}/no-such-chroot-x", "/base", session_timeout=6)


def test_unreachable_service_names_the_connect_string_without_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(MetadataStoreError) as caught:
        ZkMetadataStore(  # a password may hold "/" and "," (the credentials end at the last "@")
            f"bob:p/w,x@127.0.0.1:{port}/jobs", "/base", connection_timeout=1.5, session_timeout=4
        )
    assert f"127.0.0.1:{port}/jobs" in str(caught.value)
    assert "unreachable" in str(caught.value)
    assert "p/w" not in str(caught.value) and "w,x" not in str(caught.value)
    assert time.monotonic() - started < 10
    # kazoo retried several times; its "Connection dropped" line is logged once, not per try.
    dropped = [r for r in caplog.records if "Connection dropped" in r.getMessage()]
    assert len(dropped) <= 1
    assert not any("p/w" in r.getMessage() or "w,x" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("connect", ["alice:pa/ss@zk1:2181x", "alice:pa,ss@zk1:2181,zk2:0/jobs", "a:pa@ss@:2181"])
def test_a_bad_connect_string_with_credentials_is_named_without_them(connect: str) -> None:
    with pytest.raises(MetadataStoreError, match="job.coordinator.zk.connect") as caught:
        ZkMetadataStore(connect, "/base", connection_timeout=1.5)
    assert "pa" not in str(caught.value) and "ss" not in str(caught.value)


def test_calls_after_the_service_went_away_fail_after_bounded_retries(zk_connect: str) -> None:
    store = ZkMetadataStore(zk_connect, "/b", session_timeout=4, max_tries=2)
    store._zk.kazoo.stop()  # the session is gone; every call must fail, not hang
    started = time.monotonic()
    with pytest.raises(MetadataStoreError, match="ZooKeeper"):
        store.get("k")
    assert time.monotonic() - started < 10
    store.close()


def test_bad_keys_and_values(store: ZkMetadataStore) -> None:
    with pytest.raises(MetadataStoreError, match="non-empty"):
        store.put("", b"v")
    with pytest.raises(MetadataStoreError, match="bytes"):
        store.put("k", "text")  # type: ignore[arg-type]


def test_put_all_is_one_transaction_and_replaces_stale_segments(
    store: ZkMetadataStore, raw: KazooClient
) -> None:
    store.put("big", os.urandom(1_500_000))
    store.put_all({"big": b"small now", "new": b"1", "a/b": b"2"})
    assert store.all() == {"big": b"small now", "new": b"1", "a/b": b"2"}
    assert raw.get_children(f"{store.base_path}/big") == ["0"]


def test_put_all_with_a_failing_guard_writes_nothing(store: ZkMetadataStore) -> None:
    from samza_nb.errors import JobLeaseError

    store.put("k", b"old")
    with pytest.raises(JobLeaseError, match="fenced"):
        store.put_all(
            {"k": b"new", "other": b"x"}, guard=lambda tx: tx.check("/no-such-session-node", 0)
        )
    assert store.all() == {"k": b"old"}
    store.put_all({"k": b"new"}, guard=lambda tx: tx.check(store.base_path, 0))
    assert store.get("k") == b"new"
    with pytest.raises(MetadataStoreError, match="do not fit in one fenced transaction"):
        store.put_all({"huge": os.urandom(1_200_000)}, guard=lambda tx: None)


@pytest.mark.parametrize("connect", ["foo:bar/x", "127.0.0.1:99999", ":2181/jobs", "bob:pw@h:x"])
def test_a_malformed_connect_string_names_the_key_not_a_traceback(connect: str) -> None:
    with pytest.raises(MetadataStoreError, match=r"\(job\.coordinator\.zk\.connect\): .*write host:port") as caught:
        ZkMetadataStore(connect, "/base", connection_timeout=1)
    assert "pw" not in str(caught.value)


_FROZEN_MID_CALL = r"""
import os, signal, sys
from samza_nb.metadata.zookeeper import ZkMetadataStore

store = ZkMetadataStore(sys.argv[1], "/frozen-mid-call/base", session_timeout=4.0)
store.put("k", b"v")
client, frozen = store._zk, []

def exists_after_a_freeze():
    if not frozen:  # the named point: inside the call's first try
        frozen.append(True)
        os.kill(os.getpid(), signal.SIGSTOP)  # until the test resumes it, past the session
    return client._wait(client.kazoo.exists_async(store._path("k"))) is not None

print("exists", client.call("exists k", exists_after_a_freeze), flush=True)
"""


def test_a_process_frozen_mid_call_past_its_session_reads_again_on_resuming(zk_connect: str) -> None:
    # The call's deadline is wall-clock time: the freeze spent it. The call gets one more round
    # of tries (a new session), instead of failing with ZooKeeper up all along.
    import subprocess
    import sys
    from pathlib import Path

    child = subprocess.Popen([sys.executable, "-c", _FROZEN_MID_CALL, zk_connect], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "T":
            time.sleep(0.05)
        time.sleep(10)  # 2.5 sessions
        os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0 and out.strip() == "exists True", out + err


def _connections(store: ZkMetadataStore) -> bool:
    """Whether the store holds an open ZooKeeper session now."""
    client = store._session._client
    return client is not None and client.kazoo.connected


def test_a_released_session_ends_and_a_later_call_opens_one_that_ends_when_idle(zk_connect: str) -> None:
    with ZkMetadataStore(zk_connect, "/app-release-1/ApplicationRunnerData", session_timeout=6) as store:
        store.put("k", b"v")
        first = store._session._client
        assert first is not None
        store._session.idle_s = 0.5
        store.release_session()
        assert not first.kazoo.connected  # ended at once: its ephemeral nodes and connection go
        assert not _connections(store)
        assert store.get("k") == b"v"  # opened again for the read
        assert _connections(store)
        deadline = time.monotonic() + 10
        while _connections(store) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _connections(store)  # no call for half a second: ended again
        store.put("k", b"w")
        assert store.get("k") == b"w"
        store.release_session()
        store.release_session()  # idempotent
    assert not _connections(store)


def test_a_store_on_a_shared_client_never_releases_it(zk_connect: str) -> None:
    from samza_nb.metadata.zk_client import ZkClient

    client = ZkClient(zk_connect, session_timeout=6)
    try:
        store = ZkMetadataStore(None, "/app-release-2/ApplicationRunnerData", client=client)
        store.release_session()
        store.close()
        assert client.kazoo.connected  # the owner's (the coordinator's) session
        store.put("k", b"v")
    finally:
        client.close()


def test_a_closed_store_after_a_release_says_it_was_closed(zk_connect: str) -> None:
    store = ZkMetadataStore(zk_connect, "/app-release-3/ApplicationRunnerData", session_timeout=6)
    store.release_session()
    store.close()
    with pytest.raises(MetadataStoreError, match="the store's session was closed"):
        store.get("k")
