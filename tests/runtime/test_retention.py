"""Retention of intermediate streams: what every consumer committed is deleted, off the epoch
path (runtime/retention.py BackgroundRetention), and a failing pass still fails the job.
Run on the in-process executor."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import StreamSystemError
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def _reshuffled(system: EmbeddedSystem, count: int) -> StreamApplication:
    system.create_stream("numbers", 2)
    system.write("numbers", list(range(count)))
    system.end_stream("numbers")
    app = StreamApplication("retained", job_id="1")
    out = app.output(system.output("out", partitions=2))
    app.input(system.input("numbers", partitions=2)).partition_by(_tens, op_id="by-tens").send_to(out)
    return app


def _tens(n: int) -> int:
    return n // 10


def _intermediate(system: EmbeddedSystem) -> str:
    (stream,) = [s for s in system.list_streams() if "partition_by-by-tens" in s]
    return stream


def test_consumed_intermediate_data_is_deleted_when_the_job_ends(system: EmbeddedSystem) -> None:
    app = _reshuffled(system, 3_000)
    job = run_local(app, {"task.max.epoch.messages": "200"})
    assert job.status().state == "finished"
    assert len(job.collect("out")) == 3_000
    stream = _intermediate(system)
    newest, oldest = system.newest_offsets(stream), system.oldest_offsets(stream)
    assert sum(newest.values()) >= 3_000
    # Every consumer committed past every message: nothing older than the last batch is left.
    for partition, end in newest.items():
        assert oldest[partition] > 0, f"partition {partition}: nothing deleted (oldest 0 of {end})"
        assert end - oldest[partition] <= 210, f"partition {partition}: {end - oldest[partition]} kept"
    # The retention thread ended with the job's processor.
    assert [t for t in threading.enumerate() if t.name == "samza-nb-intermediate-retention"] == []


def test_a_failing_retention_pass_fails_the_job_with_its_error(
    system: EmbeddedSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _reshuffled(system, 2_000)

    def refuse(self: EmbeddedSystem, stream_id: str, partition: int, offset: int) -> None:
        msg = f"embedded log: cannot delete {stream_id}[{partition}] below {offset}"
        raise StreamSystemError(msg)

    monkeypatch.setattr(EmbeddedSystem, "delete_before", refuse)
    with pytest.raises(StreamSystemError, match=r"cannot delete .*partition_by-by-tens\[\d\] below \d+"):
        run_local(app, {"task.max.epoch.messages": "200"})


def test_passes_start_at_most_once_an_interval_and_join_runs_the_newest_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each deletion is a write transaction the tasks' appends wait for: passes asked for
    # within a second of the last one wait (collapsing into the newest), unless joined.
    import time

    from samza_nb.runtime import retention as retention_module
    from samza_nb.runtime.checkpoints import Checkpoint

    passes: list[tuple[float, dict[str, Checkpoint]]] = []
    monkeypatch.setattr(
        retention_module,
        "apply_retention",
        lambda plan, task_ssps, checkpoints, deleted_below: passes.append((time.monotonic(), checkpoints)),
    )
    background = retention_module.BackgroundRetention(plan=None)  # type: ignore[arg-type]
    try:
        for epoch in range(5):
            background.after_epoch({}, {"t": Checkpoint(offsets={"s/0": epoch})})
            time.sleep(0.05)
        started = time.monotonic()
        # The first pass ran at once; the four asked for within the interval collapsed.
        assert [checkpoints["t"].offsets for _, checkpoints in passes] == [{"s/0": 0}]
        background.join(timeout=5)
        assert time.monotonic() - started < 0.5  # not the rest of the interval
        assert [checkpoints["t"].offsets for _, checkpoints in passes] == [{"s/0": 0}, {"s/0": 4}]
    finally:
        background.close(timeout=5)
