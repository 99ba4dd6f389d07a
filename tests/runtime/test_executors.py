"""The executor seam: the in-process executor runs the same task epochs as Spark.

Operator and window semantics are checked here in-process (milliseconds); one parity test runs
the same applications on both executors and compares every output.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, StreamApplication, Triggers, Windows
from samza_nb.errors import ConfigError
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import run
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local


def _sessions_app(system: EmbeddedSystem, name: str) -> StreamApplication:
    app = StreamApplication(name)
    out = app.output(system.output(f"{name}-out", partitions=2))
    (
        app.input(system.input("clicks", partitions=2))
        .partition_by(lambda c: c["user"], op_id="by-user")
        .window(Windows.keyed_session(lambda kv: kv.key, timedelta(minutes=5)), op_id="session")
        .map(lambda pane: KV(pane.key.key, sorted(kv.value["n"] for kv in pane.message)))
        .send_to(out)
    )
    return app


def _clicks(system: EmbeddedSystem, count: int = 60) -> list[dict[str, Any]]:
    clicks = [{"user": f"u{i % 5}", "n": i} for i in range(count)]
    system.create_stream("clicks", 2)
    system.write("clicks", clicks, key_fn=lambda c: c["user"])
    system.end_stream("clicks")
    return clicks


def _outputs(job: Any, stream: str) -> list[tuple[Any, Any]]:
    frame = job.collect(stream)
    return sorted(zip(frame["key"].map(repr), frame["value"].map(repr), strict=True))


@pytest.mark.spark
def test_the_same_apps_give_the_same_outputs_on_spark_and_in_process(spark: Any, tmp_path: Path) -> None:
    outputs = {}
    for executor in ("spark", "local"):
        system = EmbeddedSystem("embedded", path=tmp_path / executor)
        events = generate_page_views(2_000, seed=3)
        write_page_views(system, events)
        quickstart = run(build_app(system), {"task.max.epoch.messages": "300"}, processors=2,
                         clock=StepClock(), executor=executor)
        totals = quickstart.collect("page-counts").groupby("key")["value"].sum().to_dict()
        assert totals == expected_counts(events)
        _clicks(system)
        sessions = run(_sessions_app(system, "sessions"), clock=StepClock(), executor=executor)
        outputs[executor] = (_outputs(quickstart, "page-counts"), _outputs(sessions, "sessions-out"))
    assert outputs["spark"] == outputs["local"]


def test_session_windows_in_process(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    _clicks(system, 50)
    job = run_local(_sessions_app(system, "sessions"), clock=StepClock())
    frame = job.collect("sessions-out")
    got = dict(zip(frame["key"], frame["value"], strict=True))
    assert got == {f"u{u}": [i for i in range(50) if i % 5 == u] for u in range(5)}


def test_a_session_quiet_for_its_gap_between_runs_or_epochs_ends_before_the_next_message(
    tmp_path: Path,
) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("clicks", 1)
    app = StreamApplication("quiet-sessions")
    out = app.output(system.output("sessions", partitions=1))
    (
        app.input(system.input("clicks", partitions=1))
        .window(Windows.keyed_session(lambda m: m["k"], timedelta(seconds=5)), op_id="s")
        .map(lambda pane: [pane.key.pane_id, [m["n"] for m in pane.message]])
        .send_to(out)
    )
    clock = StepClock(step_ms=1000, start_ms=1_700_000_000_000)
    system.write("clicks", [{"k": "a", "n": 1}])
    run_local(app, until="caught-up", clock=clock)  # a's session is open when the run ends
    clock.now_ms += 100_000  # a is quiet for 100 s, more than the gap
    system.write("clicks", [{"k": "a", "n": 2}])
    system.end_stream("clicks")
    job = run_local(app, until="end-of-stream", clock=clock)
    assert [messages for _pane_id, messages in job.collect("sessions")["value"]] == [[1], [2]]


def test_caught_up_on_inputs_that_hold_nothing_finishes_at_once(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("quiet", 2)  # exists, holds nothing, not ended (an empty Kafka topic)
    app = StreamApplication("quiet")
    app.input(system.input("quiet", partitions=2)).map(lambda m: m).send_to(
        app.output(system.output("copies", partitions=1))
    )
    job = run_local(app, until="caught-up", background=True)
    try:
        assert job.wait(timeout=30).state == "finished"
    finally:
        job.stop()
    assert job.collect("copies").empty


def _read(job: Any, stream: str) -> int:
    return int(job.metrics()["streams"].get(stream, {}).get("in", 0))


@pytest.mark.parametrize("ending", ["end-of-stream", "drain"])
def test_one_task_holding_every_partition_of_a_shuffle_ends_and_drains(tmp_path: Path, ending: str) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 3)
    system.write("numbers", [{"k": i % 5, "n": i} for i in range(300)])
    if ending == "end-of-stream":
        system.end_stream("numbers")
    app = StreamApplication("one-task", config={"job.systemstreampartition.grouper.factory": "all-ssp-to-single-task"})
    (
        app.input(system.input("numbers", partitions=3))
        .partition_by(lambda m: m["k"], op_id="by-k")
        .map(lambda kv: kv.value["n"])
        .send_to(app.output(system.output("copies", partitions=1)))
    )
    job = run_local(app, until="end-of-stream" if ending == "end-of-stream" else "forever", background=True)
    try:
        if ending == "end-of-stream":
            status = job.wait(timeout=30)
        else:
            # A drain stops the reading where it is: drain once every input message was read.
            deadline = time.monotonic() + 30
            while _read(job, "numbers") < 300 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert _read(job, "numbers") == 300, f"the job read {_read(job, 'numbers')} of 300 in 30 s"
            status = job.drain(wait=True, timeout=30)
    finally:
        job.stop()
    # The task hears the end (or the drain) on the shuffle's aggregate partition first, and on
    # its other partitions only after re-broadcasting it there.
    assert status.state == ("finished" if ending == "end-of-stream" else "drained")
    assert sorted(job.collect("copies")["value"]) == list(range(300))


def test_a_stored_batch_that_does_not_read_is_named_by_stream_partition_and_offset(tmp_path: Path) -> None:
    from samza_nb.errors import TaskError
    from samza_nb.systems.base import MessageKind, Record

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 1)
    system.write("numbers", [1])
    system.append("numbers", 0, [Record(MessageKind.USER, b'"k"', None, None)])  # type: ignore[arg-type]
    system.end_stream("numbers")
    app = StreamApplication("unreadable")
    app.input(system.input("numbers", partitions=1)).send_to(app.output(system.output("copies", partitions=1)))
    with pytest.raises(TaskError, match="on numbers#0 at offset 0") as raised:
        run_local(app)
    assert (raised.value.ssp, raised.value.offset) == ("numbers#0", 0)


@pytest.mark.parametrize(
    ("config", "refused"),
    [
        ({"job.elasticity.factor": "2"}, "does not split an input partition into key buckets"),
        (
            {"job.systemstreampartition.grouper.factory": "group-by-system-stream-partition"},
            r"\(2 tasks\), but the changelogs of the job's stores \(.*\) have one partition per task",
        ),
    ],
)
def test_groupings_the_engine_cannot_run_are_refused_before_anything_is_written(
    tmp_path: Path, config: dict[str, str], refused: str
) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 1)
    system.write("numbers", [1, 2])
    app = StreamApplication("refused", config=config)
    (
        app.input(system.input("numbers", partitions=1))
        .partition_by(lambda n: n % 2, op_id="by-parity")
        .window(Windows.keyed_tumbling(lambda kv: kv.key, timedelta(seconds=1), initial=lambda: 0,
                                       fold=lambda kv, n: n + 1), op_id="count")
        .map(lambda pane: pane.message)
        .send_to(app.output(system.output("counts", partitions=1)))
    )
    with pytest.raises(ConfigError, match=refused):
        run_local(app)
    assert system.partition_count("counts") is None  # nothing was created


def test_an_application_without_inputs_is_refused_before_its_job_home_exists(tmp_path: Path) -> None:
    from samza_nb.errors import PlanError

    app = StreamApplication("empty", config={"job.home": str(tmp_path / "home")})
    with pytest.raises(PlanError, match="application 'empty' reads no input stream"):
        run_local(app)
    assert not (tmp_path / "home").exists()


def test_tumbling_windows_fire_by_processing_time_in_process(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 1)
    system.write("numbers", list(range(1, 7)))
    app = StreamApplication("tumbling")
    out = app.output(system.output("sums", partitions=1))
    (
        app.input(system.input("numbers", partitions=1))
        .window(Windows.tumbling(timedelta(seconds=1), initial=lambda: 0, fold=lambda n, s: s + n),
                op_id="sum")
        .map(lambda pane: pane.message)
        .send_to(out)
    )
    # Epoch 1 reads 1..6 at t; the window closes one second later, in a later epoch.
    job = run_local(app, {"task.max.epoch.messages": "100"}, until=4, clock=StepClock(step_ms=600))
    assert list(job.collect("sums")["value"]) == [21]


def test_early_triggers_in_discarding_mode_in_process(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 1)
    system.write("numbers", list(range(10)))
    system.end_stream("numbers")
    app = StreamApplication("early")
    out = app.output(system.output("panes", partitions=1))
    window = Windows.tumbling(
        timedelta(hours=1), initial=lambda: 0, fold=lambda n, s: s + 1,
        early_trigger=Triggers.repeat(Triggers.count(4)), accumulation_mode="discarding",
    )
    (
        app.input(system.input("numbers", partitions=1))
        .window(window, op_id="count")
        .map(lambda pane: [pane.trigger_type.value, pane.message])
        .send_to(out)
    )
    job = run_local(app, clock=StepClock())
    assert [tuple(v) for v in job.collect("panes")["value"]] == [("EARLY", 4), ("EARLY", 4), ("DEFAULT", 2)]


@pytest.mark.parametrize("epoch_messages", ["1000", "2"])
@pytest.mark.parametrize(("mode", "expected"), [("accumulating", [3, 6, 7]), ("discarding", [3, 3, 1])])
def test_keyed_early_panes_restart_their_count_after_each_firing(
    tmp_path: Path, epoch_messages: str, mode: str, expected: list[int]
) -> None:
    # Within an epoch a key's pane is looked up once; a firing must make the next message of
    # the key find its pane again (deleted, or reset by the early firing).
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 1)
    system.write("numbers", list(range(14)))
    system.end_stream("numbers")
    app = StreamApplication("early-keyed", config={"task.max.epoch.messages": epoch_messages})
    out = app.output(system.output("panes", partitions=1))
    window = Windows.keyed_tumbling(
        lambda n: "even" if n % 2 == 0 else "odd", timedelta(hours=1), initial=lambda: 0,
        fold=lambda n, s: s + 1, early_trigger=Triggers.repeat(Triggers.count(3)), accumulation_mode=mode,
    )  # fmt: skip
    (
        app.input(system.input("numbers", partitions=1))
        .window(window, op_id="count")
        .map(lambda pane: [pane.key.key, pane.trigger_type.value, pane.message])
        .send_to(out)
    )
    job = run_local(app, clock=StepClock())
    panes = [tuple(v) for v in job.collect("panes")["value"]]
    for key in ("even", "odd"):
        assert [(kind, n) for k, kind, n in panes if k == key] == list(
            zip(["EARLY", "EARLY", "DEFAULT"], expected, strict=True)
        )


def test_an_early_firing_restarts_the_time_since_the_first_message(tmp_path: Path) -> None:
    # One key, three messages an epoch, a second between epochs; the early trigger fires a
    # second after the pane's first message since its last firing. A message after a firing
    # in the same epoch starts that second again (it must not fire with every message).
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 1)
    system.write("numbers", list(range(9)))
    system.end_stream("numbers")
    app = StreamApplication("early-timed", config={"task.max.epoch.messages": "3"})
    out = app.output(system.output("panes", partitions=1))
    window = Windows.keyed_tumbling(
        lambda n: "k", timedelta(hours=1), initial=lambda: 0, fold=lambda n, s: s + 1,
        early_trigger=Triggers.repeat(Triggers.time_since_first_message(timedelta(seconds=1))),
        accumulation_mode="accumulating",
    )  # fmt: skip
    (
        app.input(system.input("numbers", partitions=1))
        .window(window, op_id="count")
        .map(lambda pane: [pane.trigger_type.value, pane.message])
        .send_to(out)
    )
    job = run_local(app, clock=StepClock(step_ms=1_000))
    panes = [tuple(v) for v in job.collect("panes")["value"]]
    assert panes == [("EARLY", 4), ("EARLY", 7), ("DEFAULT", 9)]


def test_an_unknown_executor_is_a_config_error(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    _clicks(system, 5)
    with pytest.raises(ConfigError, match="unknown executor 'gpu'; known: local, spark"):
        run(_sessions_app(system, "bad"), executor="gpu")


@pytest.mark.spark
def test_several_task_epochs_share_one_spark_partition(spark: Any, tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = generate_page_views(1_000, seed=5)
    write_page_views(system, events)
    job = run(build_app(system), {"task.max.epoch.messages": "200", "job.spark.partitions": "1"},
              clock=StepClock(), executor="spark")
    assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
    assert len(job.status().tasks) > 1  # every task's epochs ran in the one Spark partition


def test_spark_partitions_default_to_the_cores_and_never_exceed_the_tasks() -> None:
    from samza_nb.config import Config
    from samza_nb.runtime.executors.spark_jobs import spark_partitions

    default = Config({})
    assert spark_partitions(default, 64, 2) == 2
    assert spark_partitions(default, 1, 2) == 1
    assert spark_partitions(Config({"job.spark.partitions": "8"}), 64, 2) == 8
    assert spark_partitions(Config({"job.spark.partitions": "8"}), 5, 2) == 5


def test_task_epochs_are_grouped_by_their_backlog_largest_first() -> None:
    from samza_nb.runtime.epoch import EpochAssignment
    from samza_nb.runtime.executors.spark_jobs import balanced_groups

    def assignment(task: str, start: int, bound: int) -> EpochAssignment:
        return EpochAssignment(
            task, "p", 1, 0, "run", "here", "/tmp", 0, [], {"s#0": start}, {"s#0": bound}, {}, {},
            max_messages=100,
        )

    # Backlogs 100 (capped), 90, 40, 30, 0, 0: round robin would pair 100+40+0 against 90+30+0.
    tasks = [
        assignment("a", 0, 500), assignment("b", 10, 100), assignment("c", 0, 40),
        assignment("d", 70, 100), assignment("e", 5, 5), assignment("f", 9, 3),
    ]
    assert [t.backlog() for t in tasks] == [100, 90, 40, 30, 0, 0]
    groups = balanced_groups(tasks, 2)
    assert [[index for index, _ in group] for group in groups] == [[0, 3, 4], [1, 2, 5]]
    assert sorted(index for group in groups for index, _ in group) == list(range(6))
    assert [len(group) for group in balanced_groups(tasks[4:], 2)] == [1, 1]  # idle tasks spread


def test_a_spark_worker_pauses_the_cycle_collector_for_an_epoch_only() -> None:
    import gc

    from samza_nb.runtime.executors.worker_epochs import collector_paused as _collector_paused

    assert gc.isenabled()
    with _collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), _collector_paused():
        msg = "a failing epoch"
        raise RuntimeError(msg)
    assert gc.isenabled()
    gc.disable()
    try:
        with _collector_paused():
            pass
        assert not gc.isenabled()  # a process that had it off keeps it off
    finally:
        gc.enable()


@pytest.mark.spark
def test_small_epochs_run_in_the_driver_with_the_same_outputs(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This pytest process salts its string hashes; the seed rule is tested on its own below.
    monkeypatch.setattr("samza_nb.runtime.executors.executor._hashes_as_workers", lambda context: True)
    events = generate_page_views(2_000, seed=11)
    ran: dict[str, tuple[int, int]] = {}
    for name, limit in (("never", "0"), ("default", None), ("always", "1000000")):
        system = EmbeddedSystem("embedded", path=tmp_path / name)
        write_page_views(system, events)
        # Resident workers keep the tasks' stores open: epochs then never run in the driver.
        config = {"task.max.epoch.messages": "300", "job.spark.resident.workers": "false"}
        if limit is not None:
            config["job.spark.driver.epoch.max.messages"] = limit
        job = run(build_app(system), config, clock=StepClock(), executor="spark")
        assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
        executor = job._executor
        ran[name] = (executor.epochs_in_driver, executor.epochs_on_spark)
    assert ran["never"][0] == 0 and ran["never"][1] > 2
    # Every epoch but each task's first (its stores may need a restore) runs in the driver.
    assert ran["always"] == (sum(ran["never"]) - 1, 1)
    # By default only the epochs that pass end-of-stream on (a few control messages) skip Spark.
    driver, on_spark = ran["default"]
    assert driver >= 1 and on_spark >= 2 and driver + on_spark == sum(ran["never"])


def test_an_epoch_runs_in_the_driver_only_when_small_local_warm_and_at_least_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from samza_nb.config import Config
    from samza_nb.runtime.epoch import EpochAssignment
    from samza_nb.runtime.executors.executor import SparkExecutor

    monkeypatch.setattr("samza_nb.runtime.executors.executor._hashes_as_workers", lambda context: True)

    def assignment(task: int, messages: int, seq: int = 1) -> EpochAssignment:
        return EpochAssignment(
            f"Partition {task}", "p", seq, 0, "run", "here", str(tmp_path), 0, [("in", task)],
            {f"in#{task}": 0}, {f"in#{task}": messages}, {}, {},
        )  # fmt: skip

    def local(master: str = "local[*]", cores: int = 2) -> Any:
        return SimpleNamespace(master=master, defaultParallelism=cores, environment={})

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    plan = build_app(system).plan()
    small, large = [assignment(0, 60), assignment(1, 40)], [assignment(0, 60), assignment(1, 41)]
    resident = SparkExecutor(Config({}))
    resident._last_seq.update({("Partition 0", "here"): 0, ("Partition 1", "here"): 0})
    assert not resident._runs_in_driver(plan, small, local())  # its workers keep the stores open
    executor = SparkExecutor(Config({"job.spark.resident.workers": "false"}))
    assert not executor._runs_in_driver(plan, small, local())  # no epoch of these tasks ran here yet
    executor._last_seq.update({("Partition 0", "here"): 0, ("Partition 1", "here"): 0})
    assert executor._runs_in_driver(plan, small, local())
    assert executor._runs_in_driver(plan, small, local("local"))
    assert not executor._runs_in_driver(plan, [assignment(0, 60, seq=2)], local())  # not the next epoch
    assert not executor._runs_in_driver(plan, large, local())  # 101 messages: over the default 100
    assert not executor._runs_in_driver(plan, small, local("spark://127.0.0.1:7077"))  # stores elsewhere
    many = [assignment(task, 1) for task in range(9)]
    executor._last_seq.update({(f"Partition {task}", "here"): 0 for task in range(9)})
    assert not executor._runs_in_driver(plan, many, local(cores=2))  # 9 task epochs: over 4 per core
    assert executor._runs_in_driver(plan, many, local(cores=3))
    never = SparkExecutor(Config({"job.spark.driver.epoch.max.messages": "0", "job.spark.resident.workers": "false"}))
    never._last_seq.update(executor._last_seq)
    assert not never._runs_in_driver(plan, small, local())
    exactly_once = build_app(system, config={"task.processing.guarantee": "exactly-once"})
    assert not executor._runs_in_driver(exactly_once.plan(), small, local())


@pytest.mark.parametrize(("seed", "same"), [("0", True), ("random", False), ("7", False)])
def test_the_driver_hashes_as_the_workers_only_unsalted(seed: str, same: bool) -> None:
    import os
    import subprocess
    import sys

    probe = (
        "from types import SimpleNamespace as N\n"
        "from samza_nb.runtime.executors.executor import _hashes_as_workers as h\n"
        "print(h(N(environment={'PYTHONHASHSEED': '0'})))"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(same)
