"""When the planner combines a partition_by for its window, and the record format of a partial
aggregate (plan/combining.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from samza_nb.api import StreamApplication, Triggers, Windows
from samza_nb.errors import PlanError, SerdeError
from samza_nb.plan.combining import CombinedValueSerde, PartialAggregate
from samza_nb.plan.kv import KV
from samza_nb.plan.serdes import JsonSerde
from samza_nb.systems import EmbeddedSystem

_MINUTE = timedelta(minutes=1)


def _count(**options: Any) -> Any:
    return Windows.keyed_tumbling(
        lambda kv: kv.key, _MINUTE, initial=lambda: 0, fold=lambda kv, n: n + 1, **options
    )


def _plan(tmp_path: Any, build: Any) -> Any:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    app = StreamApplication("comb", job_id="1")
    views = app.input(system.input("views", partitions=2, serde="json"))
    out = app.output(system.output("out", partitions=2, serde="json"))
    build(views, out)
    return app.plan()


def _by_page(views: Any) -> Any:
    return views.partition_by(lambda v: v["page"], op_id="by-page")


def _shuffle_of(plan: Any) -> dict[str, Any]:
    (operator,) = [op for op in plan.to_dict()["operators"] if op["opcode"] == "partition_by"]
    (stream,) = [s for s in plan.to_dict()["streams"] if s["stream_id"] == operator["stream_id"]]
    return {"combines_for": operator.get("combines_for"), "serde": stream["serde"]}


def test_a_partition_by_read_only_by_a_window_with_merge_sends_partial_aggregates(tmp_path: Any) -> None:
    plan = _plan(
        tmp_path,
        lambda views, out: _by_page(views).window(_count(merge=lambda a, b: a + b), op_id="count").send_to(out),
    )
    assert _shuffle_of(plan) == {
        "combines_for": "comb-1-window-count",
        "serde": "kv(json, json + partial aggregates)",
    }


@pytest.mark.parametrize(
    "build",
    [
        # no merge=: every message crosses the shuffle
        lambda views, out: _by_page(views).window(_count(), op_id="count").send_to(out),
        # an early trigger fires per message count: it must see every message
        lambda views, out: _by_page(views)
        .window(_count(merge=lambda a, b: a + b, early_trigger=Triggers.count(5)), op_id="count")
        .send_to(out),
        # another operator reads the shuffled messages too
        lambda views, out: _both(_by_page(views), out),
        # the window reads another stream as well
        lambda views, out: _by_page(views)
        .merge(views.map(lambda v: KV(v["page"], v)))
        .window(_count(merge=lambda a, b: a + b), op_id="count")
        .send_to(out),
    ],
    ids=["no-merge", "early-trigger", "two-readers", "window-reads-a-merge"],
)
def test_a_shuffle_whose_window_needs_every_message_is_not_combined(tmp_path: Any, build: Any) -> None:
    assert _shuffle_of(_plan(tmp_path, build)) == {"combines_for": None, "serde": "kv(json, json)"}


def _both(shuffled: Any, out: Any) -> None:
    shuffled.window(_count(merge=lambda a, b: a + b), op_id="count").send_to(out)
    shuffled.map(lambda kv: kv.value).send_to(out)


def test_merge_is_refused_without_fold_or_with_event_time() -> None:
    with pytest.raises(PlanError, match="merge= combines the aggregates of a processing-time window"):
        Windows.keyed_tumbling(lambda kv: kv.key, _MINUTE, merge=lambda a, b: a + b)
    with pytest.raises(PlanError, match="without event_time="):
        Windows.tumbling(
            _MINUTE, initial=lambda: 0, fold=lambda m, n: n + 1, merge=lambda a, b: a + b,
            event_time=lambda m: m["ts"],
        )  # fmt: skip
    with pytest.raises(PlanError, match="merge"):
        Windows.keyed_tumbling(
            lambda kv: kv.key, _MINUTE, initial=lambda: 0, fold=lambda kv, n: n + 1, merge=lambda a: a
        )


def test_a_partial_aggregate_reads_back_and_plain_json_values_still_read() -> None:
    serde = CombinedValueSerde(JsonSerde())
    partial = PartialAggregate({"page": "p1", "n": [1, 2]}, KV("a", [1, {"x": 2}]), 17)
    assert serde.from_bytes(serde.to_bytes(partial)) == partial
    assert serde.from_bytes(serde.to_bytes({"page": "p1"})) == {"page": "p1"}
    assert serde.from_bytes(b"0") == 0  # a JSON value never starts with a NUL byte
    with pytest.raises(SerdeError, match="partial aggregate does not decode"):
        serde.from_bytes(b"\x00\xc1")
    with pytest.raises(SerdeError, match="cannot be written to the shuffle"):
        serde.to_bytes(PartialAggregate("p", object(), 1))
    assert "count=17" in repr(partial)


class _IntAsText:
    """A user key serde: reads an int back as text (the window would see a str)."""

    def to_bytes(self, value: Any) -> bytes:
        return str(value).encode()

    def from_bytes(self, data: bytes) -> Any:
        return data.decode()


@pytest.mark.parametrize("key_serde", [_IntAsText(), "bytes"], ids=["user-serde", "bytes"])
def test_a_shuffle_whose_keys_read_back_changed_is_not_combined(tmp_path: Any, key_serde: Any) -> None:
    from samza_nb.api import serdes

    def build(views: Any, out: Any) -> None:
        (
            views.partition_by(lambda v: v["page"], op_id="by-page", serde=serdes.kv(key_serde, serdes.json()))
            .window(_count(merge=lambda a, b: a + b), op_id="count")
            .send_to(out)
        )

    assert _shuffle_of(_plan(tmp_path, build))["combines_for"] is None
