"""A stream-stream join with ``keep="all"``: every pair of equal-keyed messages within the TTL
comes out once, whatever the order and epochs; expired messages join nothing and are swept
from the stores (in-process executor)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import PlanError
from samza_nb.runtime.task.stores import is_tombstone
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local


def encode_key(key: str) -> bytes:
    return msgspec.msgpack.encode(key)


def _app(system: EmbeddedSystem, name: str, ttl: int, keep: str = "all") -> StreamApplication:
    app = StreamApplication(name, job_id="1")
    out = app.output(system.output(f"{name}-pairs", partitions=2))
    left = app.input(system.input("left", partitions=2)).partition_by(lambda m: m["k"], op_id="left-by-k")
    right = app.input(system.input("right", partitions=2)).partition_by(lambda m: m["k"], op_id="right-by-k")
    left.join(
        right, lambda mine, other: [mine.key, mine.value["n"], other.value["n"]],
        ttl=ttl, keep=keep, op_id="pairs",
    ).send_to(out)
    return app


def _messages(side: str, count: int) -> list[dict[str, Any]]:
    return [{"k": f"k{i % 3}", "n": f"{side}{i}"} for i in range(count)]


def _pairs(system: EmbeddedSystem, stream: str) -> Counter[tuple[str, str, str]]:
    return Counter(tuple(row) for row in system.read(stream)["value"])


@pytest.mark.parametrize("epoch_messages", ["3", "1000"])
def test_every_pair_comes_out_once_whatever_the_interleaving(tmp_path: Path, epoch_messages: str) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("left", 2)
    system.create_stream("right", 2)
    lefts, rights = _messages("l", 12), _messages("r", 9)
    # Rights mostly before lefts of their key, some after.
    for part in range(2):
        system.write("right", rights[part::2][:3], partition=part)
        system.write("left", lefts[part::2], partition=part)
        system.write("right", rights[part::2][3:], partition=part)
    system.end_stream("left")
    system.end_stream("right")
    run_local(_app(system, "all", 3_600_000), {"task.max.epoch.messages": epoch_messages},
              until="end-of-stream")
    expected = Counter(
        (left["k"], left["n"], right["n"]) for left in lefts for right in rights if left["k"] == right["k"]
    )
    assert _pairs(system, "all-pairs") == expected


def test_expired_messages_join_nothing_and_leave_the_store(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("left", 2)
    system.create_stream("right", 2)
    clock = StepClock(step_ms=1_000)
    app = _app(system, "ttl", 5_000)
    system.write("left", [{"k": "old", "n": "l0"}, {"k": "gone", "n": "l2"}], partition=0)
    job = run_local(app, until="caught-up", clock=clock)
    clock.now_ms += 60_000  # far past the TTL
    system.write("left", [{"k": "new", "n": "l1"}], partition=0)
    system.write("right", [{"k": "old", "n": "r0"}, {"k": "new", "n": "r1"}], partition=1)
    system.end_stream("left")
    system.end_stream("right")
    run_local(app, until="end-of-stream", clock=clock)
    assert _pairs(system, "ttl-pairs") == Counter({("new", "l1", "r1"): 1})
    # "old" was pruned when r0 met it; "gone", never seen again, by the sweep once per TTL.
    changelog = system.read(job.plan.changelog_stream_id("ttl-1-join-pairs-L"))
    last = {key: value for key, value in zip(changelog["key"], changelog["value"], strict=True)}
    assert {key: is_tombstone(value) for key, value in last.items()} == {
        encode_key("old"): True, encode_key("gone"): True, encode_key("new"): False
    }


def test_keep_must_be_latest_or_all(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    with pytest.raises(PlanError, match="pairs.*keep must be 'latest' or 'all'"):
        _app(system, "bad", 1_000, keep="every")


def test_a_join_of_unkeyed_messages_without_key_functions_says_what_to_pass(tmp_path: Path) -> None:
    from datetime import timedelta

    from samza_nb.errors import TaskError

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    for side in ("left", "right"):
        system.create_stream(side, 2)
        system.write(side, _messages(side[0], 4), key_fn=lambda m: m["k"])
        system.end_stream(side)
    app = StreamApplication("unkeyed", job_id="1")
    left, right = app.input(system.input("left")), app.input(system.input("right"))
    left.join(right, lambda a, b: [a, b], ttl=timedelta(minutes=1), op_id="pairs").send_to(
        app.output(system.output("unkeyed-pairs", partitions=2))
    )
    with pytest.raises(TaskError, match=r"operator unkeyed-1-join-pairs .*this message is a dict: pass key_fn= / other_key_fn=.*serdes\.kv"):
        run_local(app, until="end-of-stream")


@pytest.mark.parametrize("keep", ["all", "latest"])
def test_messages_without_a_key_join_nothing_and_count_as_dropped(tmp_path: Path, keep: str) -> None:
    system = EmbeddedSystem("log", path=tmp_path / "log")
    for side, values in (("left", [None, "a"]), ("right", [None, "a"])):
        system.create_stream(side, 1)
        system.write(side, [{"k": k, "n": f"{side}-{k}"} for k in values])
        system.end_stream(side)
    app = StreamApplication("keyless", job_id="1")
    app.input(system.input("left", partitions=1)).join(
        app.input(system.input("right", partitions=1)), lambda mine, other: [mine["n"], other["n"]],
        ttl=3_600_000, keep=keep, op_id="pairs", key_fn=lambda m: m["k"], other_key_fn=lambda m: m["k"],
    ).send_to(app.output(system.output("pairs", partitions=1)))
    job = run_local(app, clock=StepClock())
    assert sorted(map(tuple, job.collect("pairs")["value"])) == [("left-a", "right-a")]
    (join_id,) = [op for op in job.metrics()["operator_counters"] if op.endswith("join-pairs")]
    assert job.metrics()["operator_counters"][join_id]["dropped"] == 2
