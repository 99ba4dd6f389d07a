"""The StreamSystem contract, run against the embedded log and against Kafka (the test broker).

What the runtime relies on: create/list/delete, offsets, appends idempotent per (producer,
seq), fetch that bounds, limits, continues past gaps and drops repeated appends, control
records and timestamps that round-trip, keyed writes placed by murmur2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, serdes
from samza_nb.errors import ConfigError, SerdeError, StreamNotFoundError, StreamSystemError
from samza_nb.systems import (
    EmbeddedSystem,
    KafkaSystem,
    MessageKind,
    Record,
    StreamSystem,
    partition_for_key,
)
from samza_nb.systems.base import Fetched

Named = tuple[StreamSystem, Callable[[str], str]]


@pytest.fixture(params=["embedded", "kafka"])
def named(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Named]:
    """(system, name): ``name("s")`` is the stream id to use for ``s`` (topics get the test's
    own prefix, deleted after the test)."""
    if request.param == "embedded":
        system: StreamSystem = EmbeddedSystem("embedded", path=tmp_path)
        yield system, lambda stream: stream
        system.close()
        return
    bootstrap = request.getfixturevalue("kafka_bootstrap")
    prefix = request.getfixturevalue("kafka_topic_prefix")
    kafka = KafkaSystem("kafka", bootstrap, timeout=10.0)
    yield kafka, lambda stream: prefix + stream


def read_all(system: StreamSystem, stream: str, partition: int, *, chunk: int = 1000, **options: Any) -> tuple[list[tuple[int, Record]], int]:
    """Every (offset, record) below the newest offset, read in fetches of ``chunk``."""
    bound = system.newest_offsets(stream)[partition]
    offset = 0
    result: list[tuple[int, Record]] = []
    for _ in range(10_000):
        if offset >= bound:
            break
        fetched = system.fetch(stream, partition, offset, bound, chunk, **options)
        check_batches(fetched, offset, bound, chunk)
        for first, records in fetched.batches:
            result.extend((first + index, Record(*record)) for index, record in enumerate(records))
        assert fetched.next_offset > offset, f"fetch from {offset} made no progress"
        offset = fetched.next_offset
    assert offset == bound
    return result, offset


def check_batches(fetched: Fetched, offset: int, bound: int, limit: int) -> None:
    assert fetched.messages <= limit
    previous = offset - 1
    for first, records in fetched.batches:
        assert first > previous, "batches are ordered and do not overlap"
        previous = first + len(records) - 1
        assert previous < bound
    assert previous < fetched.next_offset <= bound


def test_create_list_and_partition_count_mismatch(named: Named) -> None:
    system, name = named
    stream = name("s")
    assert system.partition_count(stream) is None
    assert system.create_stream(stream, 2)
    assert not system.create_stream(stream, 2)
    assert system.partition_count(stream) == 2
    assert system.list_streams()[stream] == 2
    with pytest.raises(StreamSystemError) as raised:
        system.create_stream(stream, 3)
    assert stream in str(raised.value)
    assert "2 partitions" in str(raised.value) and "3" in str(raised.value)
    system.delete_stream(stream)
    assert stream not in system.list_streams()
    assert system.partition_count(stream) is None


@pytest.mark.parametrize("bad", ["", "two words", "a/b", "caf\u00e9"])
def test_create_stream_refuses_an_id_that_input_and_output_refuse(named: Named, bad: str) -> None:
    system, name = named
    stream = bad if bad == "" else name(bad)
    # Only this test's own streams: other tests of the run share the Kafka broker.
    mine = name("")
    before = {s for s in system.list_streams() if s.startswith(mine)}
    with pytest.raises(ConfigError, match="must be non-empty and match"):
        system.create_stream(stream, 1)
    assert {s for s in system.list_streams() if s.startswith(mine)} == before


def test_missing_stream_is_named_and_not_created(named: Named) -> None:
    system, name = named
    stream = name("missing")
    with pytest.raises(StreamNotFoundError, match=stream):
        system.newest_offsets(stream)
    with pytest.raises(StreamNotFoundError, match=stream):
        system.append(stream, 0, [Record(MessageKind.USER, None, b"1")])
    with pytest.raises(StreamNotFoundError, match=stream):
        system.fetch(stream, 0, 0, 10, 10)
    assert stream not in system.list_streams()


def test_records_kinds_keys_and_timestamps_round_trip(named: Named) -> None:
    system, name = named
    stream = name("kinds")
    system.create_stream(stream, 1)
    watermark = b'{"timestamp":123,"taskName":"task-1","version":1}'
    records = [
        Record(MessageKind.USER, b'"k"', b'{"n":1}', 1_700_000_000_000),
        Record(MessageKind.USER, None, b"plain", 1_700_000_000_001),
        Record(MessageKind.WATERMARK, None, watermark, 1_700_000_000_002),
        Record(MessageKind.END_OF_STREAM, None, b'{"taskName":null,"version":1}', 1_700_000_000_003),
        Record(MessageKind.DRAIN, None, b'{"taskName":null,"version":1,"runId":"r"}', 1_700_000_000_004),
    ]
    assert system.append(stream, 0, records)
    read, end = read_all(system, stream, 0)
    assert [record for _offset, record in read] == records
    assert end == system.newest_offsets(stream)[0]
    assert system.oldest_offsets(stream) == {0: 0}


def test_fetch_bounds_limits_and_continues(named: Named) -> None:
    system, name = named
    stream = name("bounded")
    system.create_stream(stream, 2)
    for start in range(0, 30, 10):
        system.append(stream, 1, [Record(MessageKind.USER, None, b"%d" % i) for i in range(start, start + 10)])
    newest = system.newest_offsets(stream)
    assert newest[0] == 0
    assert system.fetch(stream, 0, 0, newest[0], 10) == Fetched([], 0)
    read, _end = read_all(system, stream, 1, chunk=7)
    assert [int(record.value) for _offset, record in read] == list(range(30))
    # A bound below the newest offset stops there; the next read starts at the bound or before.
    offsets = [offset for offset, _record in read]
    bound = offsets[12]
    fetched = system.fetch(stream, 1, 0, bound, 100)
    assert [int(r[2]) for _f, records in fetched.batches for r in records] == list(range(12))
    assert fetched.next_offset <= bound
    rest = system.fetch(stream, 1, fetched.next_offset, newest[1], 100)
    assert [int(r[2]) for _f, records in rest.batches for r in records] == list(range(12, 30))
    assert rest.next_offset == newest[1]
    # read_records agrees with fetch.
    assert [int(r[2]) for _o, r in system.read_records(stream, 1, offsets[5], 3)] == [5, 6, 7]


def test_repeated_appends_are_read_once(named: Named) -> None:
    system, name = named
    stream = name("idempotent")
    system.create_stream(stream, 1)

    def batch(*values: int) -> list[Record]:
        return [Record(MessageKind.USER, None, b"%d" % v) for v in values]

    system.append(stream, 0, batch(1, 2), producer="task-0", producer_seq=1)
    system.append(stream, 0, batch(3), producer="task-0", producer_seq=2)
    system.append(stream, 0, batch(1, 2), producer="task-0", producer_seq=1)  # a retried epoch
    system.append(stream, 0, batch(4), producer="task-1", producer_seq=1)  # another producer
    system.append(stream, 0, batch(5))  # no producer: never deduplicated
    system.append(stream, 0, batch(5))
    read, _end = read_all(system, stream, 0)
    assert [int(record.value) for _o, record in read] == [1, 2, 3, 4, 5, 5]
    # A reader starting after the first copy does not see the repeat either.
    third = read[2][0]
    fetched = system.fetch(stream, 0, third, system.newest_offsets(stream)[0], 100)
    assert [int(r[2]) for _f, records in fetched.batches for r in records] == [3, 4, 5, 5]


def test_producer_seq_below_keeps_earlier_epochs(named: Named) -> None:
    system, name = named
    stream = name("changelog")
    system.create_stream(stream, 1, compacted=True)
    for seq in (1, 2, 3):
        system.append(
            stream, 0, [Record(MessageKind.USER, b"k%d" % seq, b"%d" % seq)], producer="task-0", producer_seq=seq
        )
    read, _end = read_all(system, stream, 0, producer_seq_below=3)
    assert [int(record.value) for _o, record in read] == [1, 2]
    # The read names where it first held a record back (a store's catch-up stops there), and
    # nothing when it held none back.
    newest = system.newest_offsets(stream)[0]
    third = max(offset for offset, _record in read_all(system, stream, 0)[0])
    assert system.fetch(stream, 0, 0, newest, 100, producer_seq_below=3).held_back == third
    assert system.fetch(stream, 0, 0, newest, 100, producer_seq_below=4).held_back is None
    assert system.fetch(stream, 0, 0, newest, 100).held_back is None


def test_keyed_writes_use_murmur2(named: Named) -> None:
    system, name = named
    stream = name("keyed")
    system.create_stream(stream, 4)
    values = [{"page": f"page-{i}"} for i in range(40)]
    assert system.write(stream, values, key_fn=lambda v: v["page"]) == 40  # type: ignore[attr-defined]
    frame = system.read_frame(stream)
    assert len(frame) == 40
    for key, partition in zip(frame["key"], frame["partition"], strict=True):
        assert partition == partition_for_key(f'"{key}"'.encode(), 4)
    stamped = name("stamped")
    system.create_stream(stamped, 1)
    system.write(stamped, ["a", "b"], timestamps=[1000, 2000])  # type: ignore[attr-defined]
    assert list(system.read_frame(stamped)["timestamp"]) == [1000, 2000]


def test_a_kv_written_is_a_keyed_message(named: Named) -> None:
    # KV(key, value) is written as Samza's OutgoingMessageEnvelope(key, message): the key is
    # the message's key (placed by murmur2 of it) and the value the message, not a pair.
    system, name = named
    stream = name("kvs")
    system.create_stream(stream, 4)
    written = [KV(f"page-{i}", {"views": i}) for i in range(12)] + [KV(None, {"views": -1})]
    assert system.write(stream, written) == 13  # type: ignore[attr-defined]
    frame = system.read_frame(stream).sort_values(["partition", "offset"])
    got = dict(zip(frame["key"], frame["value"], strict=True))
    assert got == {kv.key: kv.value for kv in written}
    for key, partition in zip(frame["key"], frame["partition"], strict=True):
        expected = 0 if key is None else partition_for_key(f'"{key}"'.encode(), 4)
        assert partition == expected
    # key_fn, if given, takes the KV; the message is still the KV's value.
    relabelled = name("kvs-relabelled")
    system.create_stream(relabelled, 1)
    system.write(relabelled, [KV("a", 1)], key_fn=lambda kv: kv.key.upper())  # type: ignore[attr-defined]
    frame = system.read_frame(relabelled)
    assert (list(frame["key"]), list(frame["value"])) == (["A"], [1])


def test_delete_before_keeps_newer_records(named: Named) -> None:
    system, name = named
    stream = name("retained")
    system.create_stream(stream, 1)
    system.append(stream, 0, [Record(MessageKind.USER, None, b"%d" % i) for i in range(10)])
    deleted = system.delete_before(stream, 0, 4)
    assert deleted in (0, 4)  # Tansu keeps everything (DeleteRecords is never sent to it)
    read, _end = read_all(system, stream, 0)
    assert [int(record.value) for _o, record in read][-6:] == [4, 5, 6, 7, 8, 9]
    assert len(read) == 10 - deleted
    assert system.oldest_offsets(stream)[0] == (4 if deleted else 0)


def test_a_written_key_without_stable_bytes_or_a_value_that_does_not_encode_is_named(named: Named) -> None:
    # The runtime's rule for keys it writes: a set or NaN would place equal keys apart or
    # merge them with None. A dict key goes as its JSON is (a table's key may be one).
    system, name = named
    stream = name("bad-keys")
    system.create_stream(stream, 4)
    with pytest.raises(SerdeError, match=r"write to stream .*bad-keys.*: value 1: key nan is NaN"):
        system.write(stream, [KV("a", 1), KV(float("nan"), 2)])  # type: ignore[attr-defined]
    with pytest.raises(SerdeError, match=r"value 0: key .* is a set"):
        system.write(stream, [{"page": "a"}], key_fn=lambda v: {v["page"]})  # type: ignore[attr-defined]
    with pytest.raises(SerdeError, match=r"write to stream .*bad-keys.*: value 0 .*cannot be encoded"):
        system.write(stream, [KV("a", object())])  # type: ignore[attr-defined]
    with pytest.raises(StreamSystemError, match=r"serde= takes a serde of values .*for a KV serde pass"):
        system.write(stream, [KV("a", 1)], serde=serdes.kv("string", "json"))  # type: ignore[attr-defined]
    assert system.write(stream, [KV({"id": 1}, "row")]) == 1  # type: ignore[attr-defined]
    assert list(system.read_frame(stream)["value"]) == ["row"]
