"""Host affinity survives restarts (SEP): a restarted job of the same deployment (run id) reads
its previous JobModel and task locality back, keeps every task on its processor and restores no
store; after an end-of-stream finish the next run is a new deployment."""

from __future__ import annotations

from pathlib import Path

from samza_nb.coordination import LocalityManager
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import metadata_store_path
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.model import TaskMode
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local

CONFIG = {"task.max.epoch.messages": "100", "processor.locations": "host-a,host-b,host-c"}


def test_a_restart_of_the_same_deployment_keeps_tasks_and_restores_nothing(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = generate_page_views(3_000, seed=5)
    write_page_views(system, events[:2_000], partitions=6, end=False)
    app = build_app(system, name="affine", partitions=6)
    first = run_local(app, CONFIG, processors=3, grouper="host-affinity", until=3, clock=StepClock())
    before = first.job_model.task_to_processor(mode=TaskMode.ACTIVE)
    assert first.status().state == "finished"  # until=3 epochs: the deployment goes on
    store = EmbeddedMetadataStore(metadata_store_path(first.plan))
    locality = LocalityManager(store).read_task_locality()
    assert set(locality) == set(before)  # task → location was recorded for every task

    # The same app and job id, no app.run.id: the restart is the same deployment.
    second = run_local(app, CONFIG, processors=3, grouper="host-affinity", until=2, clock=StepClock())
    assert second.run_id == first.run_id
    assert second.job_model.task_to_processor(mode=TaskMode.ACTIVE) == before
    assert all(m["restores"] == 0 for m in second.metrics()["tasks"].values())

    # A different processor order or count would still place tasks by locality; here the same
    # processors come back, so even a grouper that ignores history cannot move them.
    system.write("page-views", events[2_000:])
    system.end_stream("page-views")
    third = run_local(app, CONFIG, processors=3, grouper="host-affinity", clock=StepClock())
    assert third.run_id == first.run_id and third.status().state == "finished"
    assert third.job_model.task_to_processor(mode=TaskMode.ACTIVE) == before
    assert all(m["restores"] == 0 for m in third.metrics()["tasks"].values())
    totals = third.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert totals == expected_counts(events)

    # The deployment ended with end-of-stream: the next run is a new one.
    fourth = run_local(app, CONFIG, processors=3, grouper="host-affinity", clock=StepClock())
    assert fourth.run_id != first.run_id


def test_a_restart_with_fewer_processors_moves_only_the_missing_ones_tasks(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    write_page_views(system, generate_page_views(1_000, seed=6), partitions=6, end=False)
    app = build_app(system, name="shrink", partitions=6)
    first = run_local(app, CONFIG, processors=3, grouper="host-affinity", until=2, clock=StepClock())
    before = first.job_model.task_to_processor(mode=TaskMode.ACTIVE)
    second = run_local(app, CONFIG, processors=2, grouper="host-affinity", until=1, clock=StepClock())
    after = second.job_model.task_to_processor(mode=TaskMode.ACTIVE)
    assert {t: p for t, p in before.items() if p != "2"} == {t: after[t] for t, p in before.items() if p != "2"}
    moved = {t for t in before if before[t] != after[t]}
    assert moved == {t for t, p in before.items() if p == "2"}
