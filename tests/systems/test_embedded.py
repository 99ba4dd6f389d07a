"""The embedded system: a durable, batched, multi-process partitioned log."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from samza_nb.errors import StreamNotFoundError, StreamSystemError
from samza_nb.systems import EmbeddedSystem, MessageKind, Record, murmur2, partition_for_key


def test_murmur2_matches_kafka_vectors() -> None:
    # Kafka's UtilsTest.testMurmur2 vectors.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107
    assert partition_for_key(None, 4) == 0


def test_write_requires_create_stream(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    with pytest.raises(StreamNotFoundError, match=r"create_stream\('clicks'"):
        system.write("clicks", [1])


def test_offsets_count_messages_and_batches_read_back(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    assert system.create_stream("s", 2)
    assert not system.create_stream("s", 2)
    with pytest.raises(StreamSystemError, match="already exists"):
        system.create_stream("s", 3)
    system.write("s", range(10), partition=1)
    system.write("s", range(10, 15), partition=1)
    assert system.newest_offsets("s") == {0: 0, 1: 15}
    middle = system.read_records("s", 1, 8, 4)
    assert [offset for offset, _ in middle] == [8, 9, 10, 11]
    assert [int(record.value) for _, record in middle] == [8, 9, 10, 11]


def test_keyed_writes_use_murmur2_and_round_robin(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("s", 4)
    system.write("s", [{"k": "a"}, {"k": "b"}, {"k": None}], key_fn=lambda v: v["k"])
    frame = system.read("s")
    placed = dict(zip(frame["key"], frame["partition"], strict=True))
    assert placed["a"] == partition_for_key(b'"a"', 4)
    assert placed["b"] == partition_for_key(b'"b"', 4)
    assert placed[None] == 0
    system.create_stream("rr", 3)
    system.write("rr", range(6))
    assert sorted(system.newest_offsets("rr").values()) == [2, 2, 2]


def test_idempotent_appends_and_retention(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("s", 1)
    records = [Record(MessageKind.USER, None, b"x", None)] * 3
    assert system.append("s", 0, records, producer="task", producer_seq=0)
    assert not system.append("s", 0, records, producer="task", producer_seq=0)
    assert system.append("s", 0, records, producer="task", producer_seq=1)
    assert system.newest_offsets("s") == {0: 6}
    assert system.delete_before("s", 0, 4) == 3
    assert system.oldest_offsets("s") == {0: 3}
    assert [offset for offset, _ in system.read_records("s", 0, 0, 100)] == [3, 4, 5]


def test_an_epochs_batches_become_visible_together_or_not_at_all(tmp_path: Path) -> None:
    # A task epoch's outputs go to several partitions in one transaction: a failing batch
    # (here a partition that does not exist) leaves none of them behind, so a retry with
    # other records (the user fixed the code) is not taken for a repeat of the first attempt.
    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("out", 2)
    first = [Record(MessageKind.USER, None, b"1", None)]
    with pytest.raises(StreamSystemError, match=r"stream 'out' of system 'embedded' has no partition 2"):
        system.append_all(
            [("out", 0, first), ("out", 1, first), ("out", 2, first)], producer="job/t", producer_seq=0
        )
    assert system.newest_offsets("out") == {0: 0, 1: 0}
    fixed = [Record(MessageKind.USER, None, b"2", None)]
    system.append_all([("out", 0, fixed), ("out", 1, fixed)], producer="job/t", producer_seq=0)
    assert [record.value for _, record in system.read_records("out", 0, 0, 10)] == [b"2"]
    assert [record.value for _, record in system.read_records("out", 1, 0, 10)] == [b"2"]
    # A repeat of the committed attempt (a crash before the checkpoint) is still dropped whole.
    system.append_all([("out", 0, first), ("out", 1, first)], producer="job/t", producer_seq=0)
    assert system.newest_offsets("out") == {0: 1, 1: 1}


def test_a_deleted_batch_still_refuses_a_late_repeat_of_its_epoch(tmp_path: Path) -> None:
    # A frozen processor resumes and appends an epoch its task's new owner replayed and whose
    # batches retention already deleted (every consumer committed past them): refused.
    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("s", 1)
    records = [Record(MessageKind.USER, None, b"x", None)] * 2
    assert system.append("s", 0, records, producer="job/task@plan-a", producer_seq=4)
    assert system.append("s", 0, records, producer="job/other@plan-b", producer_seq=9)
    assert system.delete_before("s", 0, 4) == 4
    assert not system.append("s", 0, records, producer="job/task@plan-a", producer_seq=4)
    assert not system.append("s", 0, records, producer="job/task@plan-late", producer_seq=3)
    assert system.append("s", 0, records, producer="job/task@plan-c", producer_seq=5)
    assert system.append("s", 0, records, producer="job/other@plan-d", producer_seq=10)
    assert system.newest_offsets("s") == {0: 8}
    system.delete_stream("s")
    system.create_stream("s", 1)  # a reset job starts its sequence numbers over
    assert system.append("s", 0, records, producer="job/task@plan-e", producer_seq=0)


def _log_rows(system: EmbeddedSystem, stream_id: str) -> list[tuple[object, ...]]:
    rows = system._db().execute(
        "SELECT partition, first_offset, count, payload, producer, producer_seq FROM batches "
        "WHERE stream = ? ORDER BY partition, first_offset",
        (stream_id,),
    )
    return [tuple(row) for row in rows]


def test_an_epochs_batches_append_as_one_by_one_appends_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # append_all looks up a task epoch's partitions, repeats and retired producers in a few
    # queries per stream: the log it leaves is the one appending batch by batch leaves.
    from samza_nb.systems.embedded import appends as embedded_appends

    monkeypatch.setattr(embedded_appends, "_IN_CHUNK", 2)  # stream "a" takes two lookups
    user = [Record(MessageKind.USER, None, b"u", None)]
    with_control = [Record(MessageKind.USER, None, b"v", None), Record(MessageKind.END_OF_STREAM, None, b"", None)]
    logs = {}
    for way in ("one-by-one", "all"):
        system = EmbeddedSystem("embedded", path=tmp_path / way)
        system.create_stream("a", 3)
        system.create_stream("b", 2)
        # Already there: partition 1 of "a" has the producer's batch for seq 7 (a retried
        # task epoch), and partition 0 of "b" retired the producer's name up to seq 8.
        system.append("a", 1, user, producer="job/t@plan-1", producer_seq=7)
        system.append("b", 0, user, producer="job/t@plan-0", producer_seq=8)
        assert system.delete_before("b", 0, 1) == 1
        batches = [
            ("a", 0, user), ("a", 1, user), ("a", 2, with_control), ("b", 0, user), ("b", 1, user),
            ("a", 0, with_control),  # the same partition twice: the first one's repeat
        ]
        if way == "all":
            system.append_all(batches, producer="job/t@plan-1", producer_seq=7)
        else:
            for stream_id, partition, records in batches:
                system.append(stream_id, partition, records, producer="job/t@plan-1", producer_seq=7)
        logs[way] = (
            _log_rows(system, "a"), _log_rows(system, "b"), system.newest_offsets("a"),
            system.newest_offsets("b"), system.control_messages("a", 2, 0, 10),
        )
        with pytest.raises(StreamNotFoundError, match="'c' does not exist"):
            system.append_all([("a", 0, user), ("c", 0, user)], producer="job/t@plan-1", producer_seq=8)
        assert system.newest_offsets("a") == logs[way][2]  # nothing of the failed call
    assert logs["all"] == logs["one-by-one"]
    a_rows, b_rows, a_next, b_next, controls = logs["all"]
    assert a_next == {0: 1, 1: 1, 2: 2} and b_next == {0: 1, 1: 1} and controls == 1
    assert [row[:3] for row in a_rows] == [(0, 0, 1), (1, 0, 1), (2, 0, 2)]
    assert [row[:3] for row in b_rows] == [(1, 0, 1)]  # partition 0: the producer retired


def test_watermarks_and_end_of_stream_are_stored_in_band(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("s", 2)
    system.write("s", ["a"], partition=0, timestamps=[5])
    system.write_watermark("s", 0, 7)
    system.end_stream("s")
    kinds = [record.kind for _, record in system.read_records("s", 0, 0, 10)]
    assert kinds == [MessageKind.USER, MessageKind.WATERMARK, MessageKind.END_OF_STREAM]
    frame = system.read("s")
    assert list(frame["value"]) == ["a"] and list(frame["timestamp"]) == [5]


def _append_many(path: str, worker: int, count: int) -> None:
    system = EmbeddedSystem("embedded", path=path)
    for i in range(count):
        system.write("shared", [{"worker": worker, "i": i}], partition=i % 2)


def test_two_processes_append_concurrently_without_loss(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("shared", 2)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(tmp_path), w, 200)) for w in range(2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    frame = system.read("shared")
    assert len(frame) == 400
    assert sorted(frame["offset"][frame["partition"] == 0]) == list(range(200))


def test_threads_of_one_process_append_at_the_same_time(tmp_path: Path) -> None:
    """A notebook's driver writes from several threads (a cell, a job, a generator) at once."""
    import threading

    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("events", 2)
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            for batch in range(40):
                system.write("events", [{"worker": worker, "batch": batch, "i": i} for i in range(5)])
        except BaseException as error:  # recorded for the assertion below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    frame = system.read("events")
    assert len(frame) == 4 * 40 * 5
    assert sorted(frame.groupby("partition")["offset"].max() + 1) == sorted(
        frame.groupby("partition").size()
    )  # offsets stay dense per partition


def test_bad_writes_name_the_stream_and_leave_it_readable(tmp_path: Path) -> None:
    import pytest

    from samza_nb.errors import StreamSystemError

    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("clicks", 2)
    with pytest.raises(StreamSystemError, match="'clicks': timestamp 0 is 'abc'"):
        system.write("clicks", [1], timestamps=["abc"])  # type: ignore[list-item]
    with pytest.raises(StreamSystemError, match="2 values but 1 timestamps"):
        system.write("clicks", [1, 2], timestamps=[5])
    with pytest.raises(StreamSystemError, match=r"key_fn failed on value 1 written to stream 'clicks'"):
        system.write("clicks", [{"k": 1}, {}], key_fn=lambda v: v["k"])
    assert system.read("clicks").empty  # nothing of a rejected write was appended
    system.write("clicks", [1, 2], timestamps=[10, 20])
    system.end_stream("clicks")
    system.end_stream("clicks")  # ending twice does nothing more
    with pytest.raises(StreamSystemError, match="'clicks' of system 'embedded' has ended"):
        system.write("clicks", [3])
    assert sorted(system.read("clicks")["timestamp"]) == [10, 20]
    assert system.newest_offsets("clicks") == {0: 2, 1: 2}  # one message and one end marker each


def test_write_takes_an_iterable_of_messages_not_one_message(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("s", 1)
    for one in ("hello", b"raw", {"page": "home"}, 5):
        with pytest.raises(StreamSystemError, match=r"write to stream 's' takes an iterable of messages.*pass \[message\]"):
            system.write("s", one)  # type: ignore[arg-type]
    assert system.newest_offsets("s") == {0: 0}
    assert system.write("s", ["hello"]) == 1


def test_a_writer_waits_for_another_connections_transaction_then_writes(tmp_path: Path) -> None:
    # transaction() takes the write lock itself (short pauses instead of SQLite's busy
    # handler) and leaves the connection's busy timeout as it was.
    import sqlite3
    import threading

    from samza_nb.systems.embedded.sqlite import transaction

    path = tmp_path / "log.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("CREATE TABLE t (v INTEGER)")
    waiter = sqlite3.connect(path, isolation_level=None, timeout=60, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    wrote = threading.Event()

    def write() -> None:
        with transaction(waiter) as db:
            db.execute("INSERT INTO t VALUES (2)")
        wrote.set()

    thread = threading.Thread(target=write)
    thread.start()
    assert not wrote.wait(0.2)  # the holder's transaction is open: the writer waits
    holder.execute("COMMIT")
    thread.join(timeout=10)
    assert wrote.is_set()
    assert [row[0] for row in holder.execute("SELECT v FROM t ORDER BY v")] == [1, 2]
    assert waiter.execute("PRAGMA busy_timeout").fetchone()[0] == 60_000
    holder.close()
    waiter.close()


def test_a_log_folder_removed_and_made_again_in_the_same_process_starts_empty(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "data"
    first = EmbeddedSystem("embedded", path=folder)
    first.create_stream("a", 1)
    first.write("a", [1, 2, 3])
    shutil.rmtree(folder)  # a notebook starting afresh
    again = EmbeddedSystem("embedded", path=folder)
    assert again.list_streams() == {}
    again.create_stream("b", 1)
    again.write("b", [42])
    assert again.read_frame("b")["value"].tolist() == [42]
    assert first.list_streams() == {"b": 1}  # the old handle reads the new file too


def test_read_decodes_with_the_serde_given_else_json_where_the_bytes_are_json(tmp_path: Path) -> None:
    from samza_nb.api import serdes

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("words", 1)
    words = ["hello", "123", "true", "null", "", '"quoted"']
    system.write("words", words, serde=serdes.string())
    assert system.read("words", serde=serdes.string())["value"].tolist() == words
    assert system.read("words")["value"].tolist() == [b"hello", 123, True, None, b"", "quoted"]
