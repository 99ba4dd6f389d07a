"""SystemStream / SystemStreamPartition: ordering, str, JSON (SAMZA.md §0, §3.2)."""

from __future__ import annotations

import pytest

from samza_nb.errors import ModelError
from samza_nb.model import SystemStream, SystemStreamPartition


def test_ordering_is_system_stream_partition_then_key_bucket() -> None:
    ssps = [
        SystemStreamPartition("kafka", "b", 0),
        SystemStreamPartition("kafka", "a", 10),
        SystemStreamPartition("kafka", "a", 2, 1),
        SystemStreamPartition("kafka", "a", 2),
        SystemStreamPartition("hdfs", "z", 0),
    ]
    assert sorted(ssps) == [
        SystemStreamPartition("hdfs", "z", 0),
        SystemStreamPartition("kafka", "a", 2),
        SystemStreamPartition("kafka", "a", 2, 1),
        SystemStreamPartition("kafka", "a", 10),
        SystemStreamPartition("kafka", "b", 0),
    ]


def test_equality_includes_key_bucket_and_hash_is_stable() -> None:
    plain = SystemStreamPartition("kafka", "PVE", 1)
    assert plain == SystemStreamPartition("kafka", "PVE", 1, -1)
    assert plain != plain.with_key_bucket(0)
    assert len({plain, SystemStreamPartition("kafka", "PVE", 1)}) == 1
    assert plain.system_stream == SystemStream("kafka", "PVE")


def test_str_is_samzas_form() -> None:
    assert str(SystemStreamPartition("kafka", "PVE", 0)) == "SystemStreamPartition [kafka, PVE, 0]"
    assert (
        str(SystemStreamPartition("kafka", "PVE", 0, 1))
        == "SystemStreamPartition [kafka, PVE, 0, 1]"
    )
    assert str(SystemStream("kafka", "PVE")) == "SystemStream [system=kafka, stream=PVE]"


def test_json_round_trip_and_pre_elasticity_form() -> None:
    ssp = SystemStreamPartition("foo", "bar", 1)
    assert ssp.to_json() == {"system": "foo", "partition": 1, "stream": "bar", "keyBucket": -1}
    assert list(ssp.to_json()) == ["system", "partition", "stream", "keyBucket"]
    assert (
        SystemStreamPartition.from_json({"system": "foo", "stream": "bar", "partition": 1}) == ssp
    )
    with_bucket = {"system": "foo", "stream": "bar", "partition": 1, "keyBucket": 1}
    assert SystemStreamPartition.from_json(with_bucket) == SystemStreamPartition("foo", "bar", 1, 1)


def test_map_key_form_drops_key_bucket_and_keeps_dotted_streams() -> None:
    ssp = SystemStreamPartition("foo", "bar", 1, 3)
    assert ssp.to_map_key() == "foo.bar.1"
    assert SystemStreamPartition.from_map_key("foo.bar.1") == SystemStreamPartition("foo", "bar", 1)
    dotted = SystemStreamPartition("kafka", "app.events", 7)
    assert SystemStreamPartition.from_map_key(dotted.to_map_key()) == dotted


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("", "s", 0), "system"),
        (("k", "", 0), "stream"),
        (("k", "s", -1), "partition"),
        (("k", "s", "0"), "partition"),
        (("k", "s", 0, -2), "key_bucket"),
    ],
)
def test_bad_values_are_model_errors(args: tuple, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        SystemStreamPartition(*args)


def test_bad_json_names_the_problem() -> None:
    with pytest.raises(ModelError, match="partition"):
        SystemStreamPartition.from_json({"system": "a", "stream": "b"})
    with pytest.raises(ModelError, match="system.stream"):
        SystemStream.parse("nodot")
    with pytest.raises(ModelError, match="system.stream.partition"):
        SystemStreamPartition.from_map_key("a.b.c")
