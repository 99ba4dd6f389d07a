"""The embedded log's stored batch format: columns, and the older rows still read."""

from __future__ import annotations

import msgspec
import pytest

from samza_nb.errors import StreamSystemError
from samza_nb.systems import EmbeddedSystem
from samza_nb.systems.base import MessageKind, Record
from samza_nb.systems.batch_format import StoredBatch, decode_batch, encode_batch


def test_columns_round_trip_kinds_keys_values_and_timestamps() -> None:
    records = [
        (MessageKind.USER, b"k1", b"v1", None),
        (MessageKind.WATERMARK, None, b"\x01", 17),
        Record(MessageKind.USER, None, b"", 2**40),
    ]
    assert decode_batch(encode_batch(records)) == [tuple(record) for record in records]


def test_a_batch_without_timestamps_stores_none_for_each() -> None:
    records = [(MessageKind.USER, b"k", b"v%d" % n, None) for n in range(5)]
    payload = encode_batch(records)
    assert decode_batch(payload) == records
    assert payload[:1] == b"\xc1"


def test_rows_written_before_the_columns_are_still_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("old", 1)
    rows = [(MessageKind.USER, b'"k"', b'{"n": %d}' % n, None) for n in range(3)]
    # What an older samza_nb stored: one msgpack array per record.
    system.append_encoded("old", 0, msgspec.msgpack.encode(rows), len(rows))
    system.append("old", 0, [(MessageKind.USER, b'"k"', b'{"n": 3}', 5)])
    fetched = system.fetch("old", 0, 0, 10, 10)
    records = [record for _first, batch in fetched.batches for record in batch]
    assert [record[2] for record in records] == [b'{"n": 0}', b'{"n": 1}', b'{"n": 2}', b'{"n": 3}']
    assert records[-1][3] == 5
    assert fetched.next_offset == 4


def test_a_batch_read_by_columns_behaves_as_its_records() -> None:
    records = [
        (MessageKind.USER, b"k0", b"v0", None),
        (MessageKind.USER, None, b"v1", 7),
        (MessageKind.END_OF_STREAM, None, b"", None),
        (MessageKind.USER, b"k3", b"v3", None),
    ]
    batch = decode_batch(encode_batch(records))
    assert isinstance(batch, StoredBatch)
    assert len(batch) == 4
    assert list(batch) == records
    assert batch[1] == records[1]
    assert batch[-1] == records[-1]
    assert batch[1:3] == records[1:3]
    assert isinstance(batch[1:3], StoredBatch)
    assert batch.values == [b"v0", b"v1", b"", b"v3"]
    assert not batch.user_messages_only()
    assert batch[:2].user_messages_only()
    assert batch != records[:3]
    # Encoding a batch read by columns stores the same columns again.
    assert decode_batch(encode_batch(batch[1:])) == records[1:]


def test_a_batch_whose_columns_differ_in_length_is_reported_corrupt() -> None:
    payload = b"\xc1" + msgspec.msgpack.encode((b"\x00\x00", [None, None], [b"v"], None))
    with pytest.raises(StreamSystemError, match=r"corrupt.*2 kinds, 2 keys, 1 values"):
        decode_batch(payload)
