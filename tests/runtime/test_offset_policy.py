"""Samza's offset policy for inputs: the default for partitions without a checkpoint (oldest /
upcoming, per stream or per system), samza.reset.offset, and checkpoints outside the stored
offsets (retention) — reset per auto.offset.reset with a log line naming the partition, or an
error naming it. Runs on the embedded log (the policy is system-independent) and a whole job on
the Kafka test broker."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import StreamApplication, Windows
from samza_nb.errors import CheckpointError, ConfigError, TaskError
from samza_nb.job import run
from samza_nb.job.reset import reset_job
from samza_nb.runtime.offsets import OffsetPolicy
from samza_nb.systems import EmbeddedSystem, KafkaSystem


def _app(system: Any, prefix: str = "") -> StreamApplication:
    app = StreamApplication(f"{prefix}offsets", job_id="1")
    views = app.input(system.input(f"{prefix}in", partitions=2, serde="json"))
    out = app.output(system.output(f"{prefix}out", partitions=2, serde="json"))
    views.map(lambda v: v).send_to(out)
    return app


def _policy(system: EmbeddedSystem, config: dict[str, str]) -> OffsetPolicy:
    return OffsetPolicy(_app(system).plan(config))


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    log = EmbeddedSystem("log", path=tmp_path / "log")
    log.create_stream("in", 2)
    for first in range(0, 100, 10):  # batches of 10: retention deletes whole batches
        log.write("in", list(range(first, first + 10)), partition=0)
    return log


def test_no_checkpoint_starts_oldest_by_default_and_upcoming_per_system_or_stream(system: EmbeddedSystem) -> None:
    newest = {"in#0": 100}
    assert _policy(system, {}).start("in", 0, None, newest) == (0, False)
    by_system = {"systems.log.default.stream.samza.offset.default": "upcoming"}
    assert _policy(system, by_system).start("in", 0, None, newest) == (100, False)
    # The stream's own key wins over the system's.
    both = {**by_system, "streams.in.samza.offset.default": "oldest"}
    assert _policy(system, both).start("in", 0, None, newest) == (0, False)
    with pytest.raises(ConfigError, match="streams.in.samza.offset.default='newest'"):
        _policy(system, {"streams.in.samza.offset.default": "newest"}).start("in", 0, None, newest)


def test_upcoming_on_an_ended_stream_reads_its_end_and_the_job_finishes(system: EmbeddedSystem) -> None:
    system.end_stream("in")
    upcoming = {"streams.in.samza.offset.default": "upcoming"}
    newest = system.newest_offsets("in")
    # The end-of-stream marker is each partition's last record: the start is at it.
    assert _policy(system, upcoming).start("in", 0, None, {"in#0": newest[0]}) == (newest[0] - 1, False)
    job = run(_app(system), upcoming, until="end-of-stream", executor="local")
    assert job.status().state == "finished"
    assert system.read_frame("out").empty  # nothing was upcoming


def test_reset_offset_ignores_the_checkpoint_once_per_process(system: EmbeddedSystem) -> None:
    policy = _policy(system, {"systems.log.default.stream.samza.reset.offset": "true"})
    assert policy.start("in", 0, 40, {"in#0": 100}) == (0, True)
    assert policy.start("in", 0, 40, {"in#0": 100}) == (40, False)  # later epochs follow the checkpoint
    assert _policy(system, {}).start("in", 0, 40, {"in#0": 100}) == (40, False)


def test_a_checkpoint_below_retention_resets_with_a_log_line_or_fails_by_name(
    system: EmbeddedSystem, caplog: pytest.LogCaptureFixture
) -> None:
    system.delete_before("in", 0, 60)
    newest = {"in#0": 100}
    with caplog.at_level(logging.WARNING, logger="samza_nb.runtime.offsets"):
        assert _policy(system, {}).start("in", 0, 10, newest) == (60, True)
    assert "in[0]" in caplog.text and "10" in caplog.text and "60..100" in caplog.text
    latest = {"systems.log.consumer.auto.offset.reset": "largest"}
    assert _policy(system, latest).start("in", 0, 10, newest) == (100, True)
    strict = {"systems.log.consumer.auto.offset.reset": "none"}
    with pytest.raises(CheckpointError, match=r"input in\[0\].*offset 10 is outside the stored offsets 60\.\.100"):
        _policy(system, strict).start("in", 0, 10, newest)
    assert _policy(system, strict).start("in", 0, 70, newest) == (70, False)


@pytest.mark.services
def test_upcoming_on_kafka_skips_what_was_there_and_reset_rereads_it(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    kafka = KafkaSystem("kafka", kafka_bootstrap)
    kafka.create_stream(f"{kafka_topic_prefix}in", 2)
    kafka.write(f"{kafka_topic_prefix}in", list(range(50)))
    config = {
        "job.home": str(tmp_path / "home"),
        "systems.kafka.default.stream.samza.offset.default": "upcoming",
    }
    job = run(_app(kafka, kafka_topic_prefix), config, until="caught-up", executor="local")
    assert job.metrics()["streams"][f"{kafka_topic_prefix}in"].get("in", 0) == 0
    assert sum(job.metrics()["partitions"].values()) == 0  # caught up: no lag per partition
    kafka.write(f"{kafka_topic_prefix}in", list(range(50, 80)))
    job = run(_app(kafka, kafka_topic_prefix), config, until="caught-up", executor="local")
    assert sorted(job.collect(f"{kafka_topic_prefix}out")["value"]) == list(range(50, 80))
    reset = {**config, f"streams.{kafka_topic_prefix}in.samza.reset.offset": "true",
             f"streams.{kafka_topic_prefix}in.samza.offset.default": "oldest"}
    job = run(_app(kafka, kafka_topic_prefix), reset, until="caught-up", executor="local")
    assert job.metrics()["streams"][f"{kafka_topic_prefix}in"]["in"] == 80
    rows = job.status().partitions
    assert [(r["stream"], r["partition"], r["lag"]) for r in rows] == [
        (f"{kafka_topic_prefix}in", 0, 0), (f"{kafka_topic_prefix}in", 1, 0)
    ]
    assert all(r["committed"] == r["newest"] > 0 for r in rows)
    assert "input partition" in job.status()._repr_html_()
    assert list(job.status().lag_frame()["lag"]) == [0, 0]


def _deleting_app(system: EmbeddedSystem, upto: int) -> StreamApplication:
    """``_app`` whose map deletes offsets below ``upto`` of in#0 as it reads message 0: within
    the run, retention overtakes the reader (as a Kafka topic's retention.ms can)."""
    app = StreamApplication("offsets", job_id="1")
    views = app.input(system.input("in", partitions=2, serde="json"))
    out = app.output(system.output("out", partitions=2, serde="json"))

    def deleting(value: int) -> int:
        if value == 0:
            system.delete_before("in", 0, upto)
        return value

    views.map(deleting).send_to(out)
    return app


_SMALL_EPOCHS = {"task.max.epoch.messages": "20"}


@pytest.mark.parametrize(
    ("rule", "read"),
    [(None, [*range(20), *range(60, 100)]), ("largest", list(range(20)))],
)
def test_retention_overtaking_a_running_reader_is_named_and_follows_the_rule(
    system: EmbeddedSystem, caplog: pytest.LogCaptureFixture, rule: str | None, read: list[int]
) -> None:
    config = dict(_SMALL_EPOCHS)
    if rule is not None:
        config["systems.log.consumer.auto.offset.reset"] = rule
    with caplog.at_level(logging.WARNING, logger="samza_nb.runtime.processor.processor"):
        job = run(_deleting_app(system, 60), config, until="caught-up", executor="local")
    assert sorted(system.read_frame("out")["value"]) == read
    note = "input in[0] (system 'log'): offsets 20..59 were deleted by retention before task Partition 0 read them"
    (noted,) = job.metrics()["deleted_unread"]
    assert noted.startswith(note)
    assert noted.endswith("reading on from 60" if rule is None else "skipping to the newest "
                          "(systems.log.consumer.auto.offset.reset)")
    assert note in caplog.text


def test_retention_overtaking_a_running_reader_fails_by_name_with_auto_offset_reset_none(
    system: EmbeddedSystem,
) -> None:
    config = {**_SMALL_EPOCHS, "systems.log.consumer.auto.offset.reset": "none"}
    with pytest.raises(TaskError, match=r"in\[0\].*offsets 20\.\.59 were deleted by retention") as raised:
        run(_deleting_app(system, 60), config, until="caught-up", executor="local")
    assert "auto.offset.reset=none" in str(raised.value)
    assert (raised.value.ssp, raised.value.offset) == ("in#0", 20)
    assert sorted(system.read_frame("out")["value"]) == list(range(20))  # the first epoch's, once


def _remade_app(system: EmbeddedSystem, name: str, remake: Any, config: dict[str, str] | None = None) -> StreamApplication:
    app = StreamApplication(name, job_id="1", config=config)
    out = app.output(system.output(f"{name}-out", partitions=1, serde="json"))
    app.input(system.input("in", partitions=2, serde="json")).map(remake).send_to(out)
    return app


@pytest.mark.parametrize("new_messages", [30, 150], ids=["shorter", "longer-than-the-checkpoint"])
def test_an_input_made_again_while_the_job_runs_is_read_from_its_start(
    system: EmbeddedSystem, caplog: pytest.LogCaptureFixture, new_messages: int
) -> None:
    # The map makes the input again after the 100th message (as another process deleting
    # and creating the stream would): the next epoch reads the new stream from its start,
    # naming it in a warning, whether it is shorter than the old one (reading on from the
    # checkpoint would wait past its first messages) or longer (it would skip them).
    new = [f"new-{i}" for i in range(new_messages)]

    def remake_after_the_last(value: Any) -> Any:
        if value == 99:
            system.delete_stream("in")
            system.create_stream("in", 2)
            system.write("in", new, partition=0)
            system.end_stream("in")
        return value

    with caplog.at_level(logging.WARNING, logger="samza_nb.runtime.offsets"):
        job = run(_remade_app(system, "remade", remake_after_the_last), until="end-of-stream", executor="local")
    assert job.status().state == "finished"
    assert sorted(map(str, system.read_frame("remade-out")["value"])) == sorted([str(i) for i in range(100)] + new)
    assert "input in[0] was deleted and made again since task 'Partition 0' last committed there" in caplog.text
    assert "from offset 0 (oldest), not from its checkpointed offset 100" in caplog.text


def test_an_idle_job_whose_input_is_made_again_reads_the_new_stream(system: EmbeddedSystem) -> None:
    # Caught up at offset 100, the job waits; the input made again with 30 messages (and no
    # end of stream anywhere) is behind that offset, so no lag shows, and yet its messages
    # are the job's to read.
    def outputs() -> int:
        return len(system.read_frame("idle-out")) if "idle-out" in system.list_streams() else 0

    job = run(_remade_app(system, "idle", lambda value: value), until="forever", executor="local", background=True)
    try:
        for _ in range(200):  # bounded: 10 s
            if outputs() == 100:
                break
            time.sleep(0.05)
        assert outputs() == 100
        system.delete_stream("in")
        system.create_stream("in", 2)
        system.write("in", [f"new-{i}" for i in range(30)], partition=0)
        for _ in range(200):
            if outputs() == 130:
                break
            time.sleep(0.05)
        assert outputs() == 130
        assert job.status().state == "running"
    finally:
        job.stop()


def test_an_input_made_again_after_its_epoch_was_planned_is_not_read_twice(system: EmbeddedSystem) -> None:
    # One task reads "a" and "b", ten messages of each per epoch. While it reads "a", a map
    # makes "b" again with 40 messages: the epoch does not read the new "b" at the old
    # stream's offsets, and the next epochs read it once, from its start.
    system.create_stream("a", 1)
    system.write("a", [f"a-{i}" for i in range(30)])
    system.end_stream("a")
    system.create_stream("b", 1)
    system.write("b", [f"b-{i}" for i in range(30)])

    def remake_b(value: Any) -> Any:
        if value == "a-15":
            system.delete_stream("b")
            system.create_stream("b", 1)
            system.write("b", [f"new-{i}" for i in range(40)])
            system.end_stream("b")
        return value

    app = StreamApplication("planned", job_id="1", config={"task.max.epoch.messages": "10"})
    out = app.output(system.output("planned-out", partitions=1, serde="json"))
    a = app.input(system.input("a", partitions=1, serde="json"))
    b = app.input(system.input("b", partitions=1, serde="json"))
    a.merge(b).map(remake_b).send_to(out)
    run(app, until="end-of-stream", executor="local")
    values = list(system.read_frame("planned-out")["value"])
    new = [value for value in values if value.startswith("new-")]
    assert sorted(new) == sorted(f"new-{i}" for i in range(40))  # each once
    assert sorted(value for value in values if value.startswith("a-")) == sorted(f"a-{i}" for i in range(30))


def test_an_input_made_again_after_the_job_read_its_end_is_refused_by_name(system: EmbeddedSystem) -> None:
    # Input "done" ended (3 messages) and was read to its end; it is made again while the
    # job still reads "in". Its end of stream (and what the operators did at it) would stand
    # for the new stream's: the job stops, naming it and the way to start over.
    system.create_stream("done", 2)
    system.write("done", ["a", "b", "c"], partition=0)
    system.end_stream("done")
    system.end_stream("in")

    def remake_midway(value: Any) -> Any:
        if value == 50:
            system.delete_stream("done")
            system.create_stream("done", 2)
            system.write("done", [f"new-{i}" for i in range(10)], partition=0)
            system.end_stream("done")
        return value

    app = StreamApplication("ended", job_id="1", config={"task.max.epoch.messages": "10"})
    out = app.output(system.output("ended-out", partitions=1, serde="json"))
    inputs = app.input(system.input("in", partitions=2, serde="json"))
    done = app.input(system.input("done", partitions=2, serde="json"))
    inputs.merge(done).map(remake_midway).send_to(out)
    with pytest.raises(CheckpointError, match=r"input done\[\d\] .* was deleted and made again after the job read it to its end"):
        run(app, until="end-of-stream", executor="local")
    assert not any(str(value).startswith("new-") for value in system.read_frame("ended-out")["value"])


def test_whether_a_checkpoint_is_of_an_input_made_again_is_the_checkpoint_s_own_record(
    system: EmbeddedSystem,
) -> None:
    # Decided from what the checkpoint recorded, not from what a process saw: a process that
    # takes over a task committed on the new stream by another reads on from its checkpoint.
    first, second = _policy(system, {}), _policy(system, {})
    first.look_at_inputs()
    old = first.incarnation("in")
    assert old is not None
    assert first.start("in", 0, 40, {"in#0": 100}, task="t", recorded=old) == (40, False)
    system.delete_stream("in")
    system.create_stream("in", 2)
    first.look_at_inputs()
    second.look_at_inputs()
    new = first.incarnation("in")
    assert new not in (None, old) and second.incarnation("in") == new
    assert first.start("in", 0, 60, {"in#0": 0}, task="t", recorded=old) == (0, True)
    assert first.start("in", 0, 60, {"in#0": 0}, task="t", recorded=old) == (0, True)  # a retried epoch
    assert first.start("in", 0, 10, {"in#0": 10}, task="t", recorded=new) == (10, False)  # committed there
    assert second.start("in", 0, 10, {"in#0": 10}, task="t", recorded=new) == (10, False)  # taken over
    assert second.start("in", 1, 0, {"in#1": 0}, task="t", recorded=None) == (0, False)  # nothing recorded
    with pytest.raises(CheckpointError, match="after the job read it to its end"):
        second.start("in", 1, 5, {"in#1": 0}, task="t", recorded=old, ended=True)
    # samza.reset.offset starts over anyway: nothing to refuse.
    resetting = _policy(system, {"streams.in.samza.reset.offset": "true"})
    resetting.look_at_inputs()
    assert resetting.start("in", 0, 60, {"in#0": 0}, task="t", recorded=old) == (0, True)


def _fill_and_end(log: EmbeddedSystem, tag: str, *, end: bool = True) -> None:
    if "in" in log.list_streams():
        log.delete_stream("in")
    log.create_stream("in", 2)
    log.write("in", [f"{tag}-{i}" for i in range(10)], partition=0)
    if end:
        log.end_stream("in")


def _again_app(log: EmbeddedSystem, tmp_path: Path, config: dict[str, str] | None = None) -> StreamApplication:
    made = StreamApplication("again", job_id="1", config={"job.home": str(tmp_path / "home"), **(config or {})})
    out = made.output(log.output("again-out", partitions=1, serde="json"))
    made.input(log.input("in", partitions=2, serde="json")).map(lambda v: v).send_to(out)
    return made


def test_a_run_over_an_ended_input_made_again_since_the_last_refuses_the_old_checkpoints(tmp_path: Path) -> None:
    # The notebook's cycle: write the input, run the job, delete and write the input again,
    # run again. The old checkpoints say the input ended, at the new stream's end offset:
    # reading on from them finished at once with nothing read. The run names the input and
    # the way out instead; after a reset the new stream is read.
    log = EmbeddedSystem("log", path=tmp_path / "log")
    _fill_and_end(log, "first")
    run(_again_app(log, tmp_path), until="end-of-stream", executor="local")
    _fill_and_end(log, "second")
    with pytest.raises(CheckpointError, match=r"input in\[0\] .* was deleted and made again after the job read it"):
        run(_again_app(log, tmp_path), until="end-of-stream", executor="local")
    reset_job(_again_app(log, tmp_path).plan())
    run(_again_app(log, tmp_path), until="end-of-stream", executor="local")
    assert sorted(log.read_frame("again-out")["value"]) == sorted(
        [f"first-{i}" for i in range(10)] + [f"second-{i}" for i in range(10)]
    )


@pytest.mark.parametrize("config", [{}, {"streams.in.samza.reset.offset": "true"}], ids=["default", "reset-offset"])
def test_a_run_over_a_live_input_made_again_since_the_last_reads_it_from_its_start(
    tmp_path: Path, config: dict[str, str]
) -> None:
    log = EmbeddedSystem("log", path=tmp_path / "log")
    _fill_and_end(log, "first", end=False)
    run(_again_app(log, tmp_path, config), until="caught-up", executor="local")
    _fill_and_end(log, "second", end=False)
    run(_again_app(log, tmp_path, config), until="caught-up", executor="local")
    assert sorted(log.read_frame("again-out")["value"]) == sorted(
        [f"first-{i}" for i in range(10)] + [f"second-{i}" for i in range(10)]
    )


def test_an_input_made_again_is_not_late_for_the_watermarks_of_the_old_one(tmp_path: Path) -> None:
    # An event-time window saw the old stream's watermark pass 20 s; the stream is made again
    # with the same two clicks (at 1 s and 2 s) in the same run. They are read again from the
    # start, and are not dropped as late: the window's floor was the old stream's.
    log = EmbeddedSystem("log", path=tmp_path / "log")

    def clicks() -> None:
        log.create_stream("clicks", 1)
        log.write("clicks", [{"user": "u", "ts": 1000}, {"user": "u", "ts": 2000}])
        log.write_watermark("clicks", 0, 20_000)

    def remake_once(click: Any) -> Any:
        if click["ts"] == 2000 and not remade:
            remade.append(True)
            log.delete_stream("clicks")
            clicks()
            log.end_stream("clicks")
        return click

    remade: list[bool] = []
    clicks()
    app = StreamApplication("late", job_id="1", config={"job.home": str(tmp_path / "home")})
    out = app.output(log.output("late-out", partitions=1, serde="json"))
    (
        app.input(log.input("clicks", partitions=1, serde="json"))
        .map(remake_once)
        .window(
            Windows.keyed_tumbling(
                lambda click: click["user"], 10_000, initial=lambda: 0, fold=lambda click, n: n + 1,
                event_time=lambda click: click["ts"],
            ),
            op_id="count",
        )
        .map(lambda pane: pane.message)
        .send_to(out)
    )
    run(app, until="end-of-stream", executor="local")
    assert remade and list(log.read_frame("late-out")["value"]) == [2, 2]


def test_streams_made_again_past_their_checkpoints_are_reported_once_per_stream(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A broker that came back empty: the checkpoints of an input and an intermediate stream
    # lie past their ends. The input follows auto.offset.reset (unset: the offset default),
    # the intermediate stream is read from its start; one warning per stream.
    log = EmbeddedSystem("log", path=tmp_path / "log")
    app = StreamApplication("again", job_id="1")
    views = app.input(log.input("in", partitions=2, serde="json"))
    out = app.output(log.output("out", partitions=2, serde="json"))
    views.partition_by(lambda v: v, lambda v: v, op_id="by-value").map(lambda kv: kv.value).send_to(out)
    plan = app.plan({})
    (intermediate,) = plan.intermediate_streams
    log.create_stream("in", 2)
    log.create_stream(intermediate, 2)
    log.write("in", [1, 2, 3], partition=0)
    policy = OffsetPolicy(plan)
    newest = {"in#0": 3, "in#1": 0, f"{intermediate}#0": 0, f"{intermediate}#1": 0}
    with caplog.at_level(logging.WARNING, logger="samza_nb.runtime.offsets"):
        assert policy.start("in", 0, 40, newest) == (0, True)
        assert policy.start("in", 1, 7, newest) == (0, True)
        assert policy.start(intermediate, 0, 25, newest) == (0, True)
        assert policy.start(intermediate, 1, 0, newest) == (0, False)  # within: as checkpointed
        assert policy.start(intermediate, 0, 25, newest) == (25, False)  # looked at once per process
        policy.report()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        f"intermediate {intermediate} (system 'log') was made again since the job last committed "
        "(broker data lost, or the topic deleted and created): partition 0 checkpointed at 25, now "
        "ends at 0; the job reads it from its start",
        "input in (system 'log') was made again since the job last committed (broker data lost, or "
        "the topic deleted and created): partition 0 checkpointed at 40, now ends at 3, partition 1 "
        "checkpointed at 7, now ends at 0; the job reads it from its start (the offset default)",
    ]
    strict = OffsetPolicy(app.plan({"systems.log.consumer.auto.offset.reset": "none"}))
    with pytest.raises(CheckpointError, match=r"input in\[0\].*offset 40 is outside the stored offsets 0\.\.3"):
        strict.start("in", 0, 40, newest)
