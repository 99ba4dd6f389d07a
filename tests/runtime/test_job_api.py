"""The Job handle: until=, wait timeouts, add_processor/rebalance, early-firing windows."""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, StreamApplication, Triggers, Windows
from samza_nb.errors import ConfigError, JobError, JobTimeoutError
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import run
from samza_nb.systems import EmbeddedSystem

pytestmark = pytest.mark.spark


class StepClock:
    def __init__(self) -> None:
        self.now = 5_000_000

    def __call__(self) -> int:
        self.now += 1_000
        return self.now


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def _wait_for_epochs(job: Any, epochs: int) -> None:
    deadline = time.monotonic() + 120
    while job.epoch < epochs and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.epoch >= epochs


def test_until_a_number_of_epochs_then_caught_up_finishes_the_rest(spark: Any, system: EmbeddedSystem) -> None:
    events = generate_page_views(1_200, seed=4)
    write_page_views(system, events, end=False)
    config = {"task.max.epoch.messages": "100"}
    first = run(build_app(system, name="bounded"), config, until=2, clock=StepClock())
    assert first.epoch == 2
    assert first.status().state == "finished"
    assert 0 < first.metrics()["streams"]["page-views"]["in"] < 1_200
    # A new job on the same app continues from the checkpoints and stops once caught up.
    second = run(build_app(system, name="bounded"), config, until="caught-up", clock=StepClock())
    assert second.status().state == "finished"
    assert second.status().tasks and all(task["lag"] == 0 for task in second.status().tasks.values())
    assert first.metrics()["streams"]["page-views"]["in"] + second.metrics()["streams"]["page-views"]["in"] == 1_200


def test_wait_times_out_on_an_input_that_never_ends(spark: Any, system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(50), end=False)
    job = run(build_app(system, name="open"), until="end-of-stream", background=True, clock=StepClock())
    with pytest.raises(JobTimeoutError, match="still running"):
        job.wait(timeout=1.0)
    assert job.stop().state == "stopped"


def test_bad_run_arguments_are_config_errors(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(5))
    with pytest.raises(ConfigError, match="until must be one of"):
        run(build_app(system), until="sometime")
    with pytest.raises(ConfigError, match="processors must be a positive int"):
        run(build_app(system), processors=0)
    with pytest.raises(ConfigError, match="run\\(\\) takes a StreamApplication, got str 'page-views'"):
        run("page-views")


def test_add_processor_at_a_new_location_moves_tasks_and_loses_nothing(spark: Any, system: EmbeddedSystem) -> None:
    events = generate_page_views(3_000, seed=8)
    write_page_views(system, events[:1_500], partitions=4, end=False)
    config = {"task.max.epoch.messages": "150", "processor.locations": "host-a"}
    job = run(build_app(system, name="grown"), config, processors=1, grouper="host-affinity",
              until="end-of-stream", background=True, clock=StepClock())
    _wait_for_epochs(job, 2)
    model = job.add_processor(location_id="host-b")
    assert set(model.containers) == {"0", "1"}
    moved = set(model.containers["1"].tasks)
    assert len(moved) == 2  # balanced: half of the four tasks move to the new processor
    assert model.containers["1"].location_id == "host-b"
    system.write("page-views", events[1_500:])
    system.end_stream("page-views")
    assert job.wait(timeout=300).state == "finished"
    totals = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert totals == expected_counts(events)
    restored_tasks = {task for task, m in job.metrics()["tasks"].items() if m["restored_records"] > 0}
    assert restored_tasks and restored_tasks <= moved  # only the moved tasks rebuilt their windows


def test_rebalance_with_an_unknown_grouper_lists_the_known_ones(spark: Any, system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(100), end=False)
    job = run(build_app(system, name="regroup"), processors=2, until="end-of-stream",
              background=True, clock=StepClock())
    before = job.job_model
    with pytest.raises(ConfigError, match="host-affinity"):
        job.rebalance(grouper="round-robin-ish")
    assert job.grouper == "group-by-container-count"  # a failed rebalance changes nothing
    assert job.job_model == before
    assert job.rebalance(grouper="host-affinity").containers.keys() == before.containers.keys()
    assert job.grouper == "host-affinity"
    # Kill processor 1 and add two at new hosts in one step: only processor 1's tasks move.
    regrouped = job.regroup({"0": job.processors["0"], "2": "host-x", "3": "host-y"})
    assert set(regrouped.containers) == {"0", "2", "3"}
    assert set(regrouped.containers["0"].tasks) == set(before.containers["0"].tasks)
    assert job.processors == {"0": before.containers["0"].location_id, "2": "host-x", "3": "host-y"}
    with pytest.raises(JobError, match="at least one processor"):
        job.regroup({})
    with pytest.raises(ConfigError, match="did you mean"):
        job.regroup({"9": "host-z"}, grouper="host-afinity")
    assert job.job_model is regrouped and set(job.processors) == {"0", "2", "3"}
    with pytest.raises(JobError, match=r"processor '0 ' at 'host-b': ids and locations are non-empty names"):
        job.regroup({**job.processors, "0 ": "host-b"})
    with pytest.raises(JobError, match=r"processor '2' runs at 'host-x', not 'host-q'; a processor does not move"):
        job.regroup({**job.processors, "2": "host-q"})
    assert job.job_model is regrouped and set(job.processors) == {"0", "2", "3"}
    with pytest.raises(JobError, match="no processor '7'"):
        job.kill_processor("7")
    job.stop()
    with pytest.raises(JobError, match="has stopped; there is nothing to regroup"):
        job.rebalance()  # a job that ended keeps the model it ended with


def test_early_firing_panes_discarding_and_accumulating(spark: Any, system: EmbeddedSystem) -> None:
    values = [{"user": f"u{i % 3}", "n": i} for i in range(31)]
    system.create_stream("clicks", 2)
    system.write("clicks", values, key_fn=lambda v: v["user"])
    system.end_stream("clicks")
    results = {}
    for mode in ("discarding", "accumulating"):
        app = StreamApplication(f"early-{mode}")
        out = app.output(system.output(f"panes-{mode}", partitions=2))
        (
            app.input(system.input("clicks", partitions=2))
            .partition_by(lambda v: v["user"], lambda v: v, op_id="by-user")
            .window(
                Windows.keyed_tumbling(
                    lambda kv: kv.key, timedelta(hours=1), initial=lambda: 0, fold=lambda kv, n: n + 1,
                    early_trigger=Triggers.repeat(Triggers.count(4)), accumulation_mode=mode,
                ),
                op_id="count",
            )
            .map(lambda pane: KV(pane.key.key, pane.message))
            .send_to(out)
        )
        job = run(app, until="end-of-stream", clock=StepClock())
        frame = job.collect(f"panes-{mode}").sort_values(["partition", "offset"])
        results[mode] = [(str(k), int(v)) for k, v in zip(frame["key"], frame["value"], strict=True)]
    per_user = Counter(v["user"] for v in values)  # u0: 11, u1: 10, u2: 10
    discarding: dict[str, list[int]] = {}
    for user, count in results["discarding"]:
        discarding.setdefault(user, []).append(count)
    accumulating: dict[str, list[int]] = {}
    for user, count in results["accumulating"]:
        accumulating.setdefault(user, []).append(count)
    for user, total in per_user.items():
        # Discarding: every early pane holds 4 new messages; the panes add up to the total.
        assert sum(discarding[user]) == total
        assert discarding[user][: total // 4] == [4] * (total // 4)
        # Accumulating: panes grow by 4 and the last one (at end-of-stream) is the total.
        assert accumulating[user][: total // 4] == [4 * (i + 1) for i in range(total // 4)]
        assert accumulating[user][-1] == total


def test_a_job_without_its_input_leaves_no_trace(system: EmbeddedSystem) -> None:
    from samza_nb.errors import StreamNotFoundError
    from samza_nb.job import job_home

    app = build_app(system, name="missing-input")
    with pytest.raises(StreamNotFoundError, match=r"create_stream\('page-views'"):
        run(app)
    assert not job_home(app.plan()).exists()


def test_draining_an_ended_job_is_refused_and_leaves_no_notification(
    spark: Any, system: EmbeddedSystem
) -> None:
    from samza_nb.drain import read_drain_notifications

    write_page_views(system, generate_page_views(100))
    job = run(build_app(system, name="ended"), {"app.run.id": "same-run"}, clock=StepClock())
    with pytest.raises(JobError, match="has already finished; there is nothing to drain"):
        job.drain()
    assert read_drain_notifications(job.metadata) == []


def test_a_job_its_status_and_drain_states_draw_themselves(spark: Any, system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(200))
    job = run(build_app(system, name="drawn"), processors=2, clock=StepClock())
    page = job._repr_html_()
    assert "<b>drawn</b>" in page and "<b>finished</b>" in page
    assert page.count("<tr><td>Partition ") == 4  # one row per task
    assert "0 at " in page and "1 at " in page  # both processors and their locations
    states = job.drain_states()._repr_html_()
    assert "0 of 8 SSPs drained" in states  # ended without a drain: 4 tasks, 2 streams


def test_a_job_waiting_on_a_quiet_input_runs_no_epochs(spark: Any, system: EmbeddedSystem) -> None:
    system.create_stream("quiet", 2)
    app = StreamApplication("quiet")
    out = app.output(system.output("quiet-out", partitions=2))
    app.input(system.input("quiet", partitions=2)).map(lambda v: v * 2).send_to(out)
    job = run(app, until="forever", background=True)
    time.sleep(1.0)
    assert job.epoch == 0  # nothing to read: no Spark job was submitted
    system.write("quiet", [1, 2, 3])
    deadline = time.monotonic() + 60
    while len(job.collect("quiet-out")) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    epochs = job.epoch
    time.sleep(1.0)
    assert job.epoch == epochs  # quiet again: no more epochs
    assert job.stop().state == "stopped"
    assert sorted(job.collect("quiet-out")["value"]) == [2, 4, 6]


def test_partition_counts_that_contradict_the_streams_are_refused_before_anything_runs(
    system: EmbeddedSystem,
) -> None:
    from samza_nb.errors import PlanError
    from samza_nb.job import job_home

    system.create_stream("in", 2)
    system.write("in", [{"i": i} for i in range(6)])
    system.end_stream("in")
    system.create_stream("out", 3)

    def app_with(inputs: int | None, outputs: int | None) -> StreamApplication:
        app = StreamApplication("counts-checked")
        app.input(system.input("in", partitions=inputs)).send_to(app.output(system.output("out", partitions=outputs)))
        return app

    # More input partitions than the stream has: the job would wait for them forever.
    with pytest.raises(PlanError, match=r"input stream 'in' .* has 2 partitions, but its descriptor says partitions=7: .*wait forever"):
        run(app_with(7, None), executor="local")
    # Fewer: partition 1 would never be read.
    with pytest.raises(PlanError, match=r"partitions=1: the job would never read partition 1;"):
        run(app_with(1, None), executor="local")
    assert not job_home(app_with(1, None).plan()).exists()
    # An output whose descriptor contradicts its stream: refused before any epoch wrote to it.
    with pytest.raises(PlanError, match=r"output stream 'out' .* has 3 partitions, but its descriptor says partitions=5"):
        run(app_with(None, 5), executor="local")
    assert system.newest_offsets("out") == {0: 0, 1: 0, 2: 0}
    run(app_with(None, None), executor="local")
    assert sorted(value["i"] for value in system.read("out")["value"]) == list(range(6))


def test_an_intermediate_stream_made_with_another_partition_count_asks_for_a_reset(
    system: EmbeddedSystem,
) -> None:
    from samza_nb.errors import PlanError
    from samza_nb.job.reset import reset_job

    system.create_stream("in", 2)
    system.write("in", [{"k": i % 7, "v": i} for i in range(50)])
    system.end_stream("in")

    def app() -> StreamApplication:
        app = StreamApplication("regrouped")
        (app.input(system.input("in")).partition_by(lambda m: m["k"], op_id="by-k")
         .map(lambda kv: KV(kv.key, kv.value["v"])).send_to(app.output(system.output("out", partitions=2))))
        return app

    run(app(), {"job.intermediate.stream.partitions": "2"}, executor="local")
    four = {"job.intermediate.stream.partitions": "4"}
    with pytest.raises(PlanError, match=r"intermediate stream 'regrouped-1-partition_by-by-k' has 2 partitions, made by an earlier run .* needs 4 .*samza-nb reset"):
        run(app(), four, executor="local")
    reset_job(app().plan(four))
    run(app(), four, executor="local")
    assert system.partition_count("regrouped-1-partition_by-by-k") == 4


def test_a_recreated_input_behind_an_ended_checkpoint_is_refused_until_the_job_is_reset(
    system: EmbeddedSystem,
) -> None:
    # The job's checkpoints say the input ended at offset 21 (20 messages and the end of
    # stream); the stream was deleted and written again with 5 messages. Reading on would drop all 5 as after the end of stream
    # (a remote metadata store outlives a new job home the same way): refused, naming reset.
    from samza_nb.errors import CheckpointError
    from samza_nb.job.reset import reset_job

    def fill(count: int) -> None:
        system.create_stream("in", 1)
        system.write("in", [{"i": i} for i in range(count)])
        system.end_stream("in")

    def app() -> StreamApplication:
        app = StreamApplication("recreated")
        app.input(system.input("in")).send_to(app.output(system.output("out", partitions=1)))
        return app

    fill(20)
    run(app(), executor="local")
    system.delete_stream("in")
    fill(5)
    with pytest.raises(CheckpointError, match=r"input in\[0\] .* was deleted and made again after the job read it to its end"):
        run(app(), executor="local")
    assert len(system.read("out")) == 20
    reset_job(app().plan())
    run(app(), executor="local")
    assert len(system.read("out")) == 25


def test_killing_processor_0_under_the_count_grouper_moves_its_tasks_to_a_live_processor(
    system: EmbeddedSystem,
) -> None:
    # The count grouper names its containers "0".."N-1": with processor 0 gone, its container
    # "0" must land on processor 1, not on nobody.
    events = generate_page_views(3_000, seed=8)
    write_page_views(system, events[:1_000], end=False)
    job = run(build_app(system, name="orphans"), {"task.max.epoch.messages": "200"}, processors=2,
              until="end-of-stream", background=True, executor="local")
    try:
        deadline = time.monotonic() + 60
        while job.epoch < 2:
            assert time.monotonic() < deadline, "two epochs within 60 s"
            time.sleep(0.05)
        model = job.kill_processor("0")
        assert set(model.containers) == {"1"} and len(model.containers["1"].tasks) == 4
        system.write("page-views", events[1_000:])
        system.end_stream("page-views")
        status = job.wait(timeout=120)
    finally:
        job.stop()
    assert status.state == "finished"
    totals = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert totals == expected_counts(events)


def test_killing_a_processor_of_a_finished_job_says_the_job_finished(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(20))
    job = run(build_app(system, name="ended"), executor="local")
    with pytest.raises(JobError, match=r"job 'ended' has finished; there is nothing to regroup"):
        job.kill_processor("0")


def test_ctrl_c_while_spark_starts_stops_the_job_and_releases_its_lease(
    system: EmbeddedSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    from samza_nb.errors import JobInterruptedError
    from samza_nb.runtime.executors.executor import LocalExecutor

    events = generate_page_views(300, seed=6)
    write_page_views(system, events)
    app = build_app(system, name="interrupted-start")

    def interrupted(_executor: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(LocalExecutor, "start", interrupted)
        with pytest.raises(JobInterruptedError) as raised:
            run(app, executor="local", background=True)
    job = raised.value.job
    assert job is not None and job.status().state == "stopped"
    assert "interrupted: job 'interrupted-start' stopped after epoch 0" in str(raised.value)
    # The lease went with it: the next run of the job starts at once and counts everything.
    again = run(app, executor="local")
    assert again.status().state == "finished"
    assert again.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)


@pytest.mark.parametrize("reading", ["now", None, -5, True])
def test_a_clock_that_returns_no_time_fails_the_run_and_leaves_the_job_runnable(
    system: EmbeddedSystem, reading: Any
) -> None:
    events = generate_page_views(300, seed=9)
    write_page_views(system, events)
    with pytest.raises(JobError, match=r"the job's clock returned .*epoch milliseconds"):
        run(build_app(system, name="clocked"), executor="local", clock=lambda: reading)
    # Nothing recorded the bad time: the next run (with the default clock) counts everything once.
    job = run(build_app(system, name="clocked"), executor="local")
    totals = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert totals == expected_counts(events)


def test_processors_added_and_killed_by_number_take_their_configured_locations(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(500, seed=4), end=False)
    config = {"processor.locations": "host-a,host-b,host-c"}
    job = run(build_app(system, name="placed"), config, processors=2, grouper="host-affinity",
              until="forever", background=True, executor="local")
    try:
        job.add_processor()
        assert job.processors == {"0": "host-a", "1": "host-b", "2": "host-c"}
        job.kill_processor(1)  # type: ignore[arg-type]  # a number means its id
        assert set(job.processors) == {"0", "2"}
        for blank in ("", " "):
            with pytest.raises(JobError, match="a location id is a non-empty string"):
                job.add_processor(blank)
        assert set(job.processors) == {"0", "2"}
    finally:
        job.stop()


def test_a_huge_processor_count_is_refused_before_anything_is_made() -> None:
    from samza_nb.config import Config
    from samza_nb.job.preparation import initial_processors

    with pytest.raises(ConfigError, match="processors must be at most 1024"):
        initial_processors(Config({}), 10**20)
    with pytest.raises(ConfigError, match="job.container.count"):
        Config({"job.container.count": "2147483647"})
