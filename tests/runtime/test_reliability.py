"""Reliability defects of issue 12, each with the test that failed before: two runs of one job,
a lost metadata store, corrupt stores and logs, unstable partition keys, idle cost, log files."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import (
    ConfigError,
    JobLeaseError,
    MetadataStoreError,
    SerdeError,
    ServiceError,
    StreamSystemError,
    TaskError,
)
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import job_home, metadata_store_path, run
from samza_nb.job.reset import reset_job
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local

CONFIG = {"task.max.epoch.messages": "100"}

_HOLDER = """
import sys, time
from samza_nb.examples.page_views import build_app
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local
job = run_local(build_app(EmbeddedSystem("embedded", path=sys.argv[1]), name="shared"),
                until="forever", background=True)
print("holding", flush=True)
time.sleep(600)
"""


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def test_a_second_run_of_a_running_job_fails_at_once_naming_the_holder(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(200), end=False)
    app = build_app(system, name="shared")
    first = run_local(app, CONFIG, until="forever", background=True)
    try:
        started = time.monotonic()
        with pytest.raises(JobLeaseError, match="in use by .*this process") as refused:
            run_local(app, CONFIG)  # the same kernel: the background job still runs
        assert time.monotonic() - started < 10
        assert "to queue behind it: run(..., lease_wait=True)" in str(refused.value)
        # A reset is told to stop the run first, not how to queue behind it.
        with pytest.raises(JobLeaseError, match="stop or drain that run first") as not_reset:
            reset_job(app.plan())
        assert "queue behind" not in str(not_reset.value)
    finally:
        first.stop()
    # Stopped: the lease is free, and the next run is the same deployment.
    second = run_local(app, CONFIG, until=1)
    assert second.run_id == first.run_id


def test_another_process_holding_the_job_is_named_and_waited_for(system: EmbeddedSystem, tmp_path: Path) -> None:
    write_page_views(system, generate_page_views(200), end=False)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path / "log")],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"holding"
        app = build_app(system, name="shared")
        with pytest.raises(JobLeaseError, match=f"pid {holder.pid}"):
            run_local(app, CONFIG)
        os.killpg(holder.pid, signal.SIGKILL)  # the OS releases the lock of a killed holder
        holder.wait(30)
        job = run_local(app, CONFIG, until=1)
        assert job.status().state == "finished"
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(30)


def test_a_lost_metadata_store_is_refused_not_miscounted(system: EmbeddedSystem) -> None:
    events = generate_page_views(600, seed=4)
    write_page_views(system, events)
    app = build_app(system, name="forgetful")
    job = run_local(app, CONFIG, clock=StepClock())
    assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
    metadata_store_path(job.plan).unlink()
    with pytest.raises(MetadataStoreError, match="lost its records.*samza-nb reset"):
        run_local(app, CONFIG, clock=StepClock())
    shutil.rmtree(job_home(job.plan))  # the whole job folder: changelogs and shuffles remain
    with pytest.raises(MetadataStoreError, match="forgetful-1-by-page-partition_by|changelog"):
        run_local(app, CONFIG, clock=StepClock())
    # The documented way out: reset the job, then it starts over from its inputs.
    deleted = reset_job(job.plan)
    assert any("changelog" in line for line in deleted)
    system.delete_stream("page-counts")
    again = run_local(app, CONFIG, clock=StepClock())
    assert again.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)


def test_a_corrupt_store_is_rebuilt_from_its_changelog_and_says_so(system: EmbeddedSystem) -> None:
    events = generate_page_views(900, seed=9)
    write_page_views(system, events[:600], end=False)
    app = build_app(system, name="corrupt")
    first = run_local(app, CONFIG, until=4, clock=StepClock())
    currents = list((Path(first.store_root)).rglob("CURRENT"))
    assert currents
    for current in currents:
        current.write_bytes(b"MANIFEST-9999")  # points at a manifest that does not exist
    system.write("page-views", events[600:])
    system.end_stream("page-views")
    job = run_local(app, CONFIG, clock=StepClock())
    assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
    rebuilt = job.metrics()["rebuilt_stores"]
    assert rebuilt and all("RocksDB could not open" in note for note in rebuilt)


def test_a_malformed_log_file_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "log.sqlite3").write_bytes(b"this is not a database" * 100)
    system = EmbeddedSystem("embedded", path=folder)
    with pytest.raises(StreamSystemError, match=r"log\.sqlite3.*cannot be opened"):
        system.partition_count("anything")


def test_a_dict_partition_key_is_rejected_naming_the_operator(system: EmbeddedSystem) -> None:
    system.create_stream("s", 2)
    system.write("s", [{"a": 1, "b": 2}, {"b": 2, "a": 1}])
    system.end_stream("s")
    app = StreamApplication("dictkeys")
    out = app.output(system.output("out", partitions=2))
    app.input(system.input("s", partitions=2)).partition_by(lambda v: v, lambda v: 1, op_id="by-dict").send_to(out)
    with pytest.raises(TaskError) as failure:
        run_local(app)
    assert failure.value.op_id == "dictkeys-1-partition_by-by-dict"
    assert isinstance(failure.value.__cause__, SerdeError)


def test_rocksdb_info_logs_stay_bounded_over_many_epochs(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(400), end=False)
    job = run_local(build_app(system, name="logs"), {"task.max.epoch.messages": "5"}, until=30,
                    clock=StepClock())
    old_logs = list(Path(job.store_root).rglob("LOG.old*"))
    stores = list(Path(job.store_root).rglob("CURRENT"))
    assert stores and len(old_logs) <= 2 * len(stores)


def test_an_idle_windowed_job_runs_epochs_only_when_a_timer_is_due(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(100), end=False)
    job = run_local(build_app(system, name="idle"), CONFIG, until="forever", background=True)
    try:
        deadline = time.monotonic() + 60
        while job.status().tasks and any(t["lag"] for t in job.status().tasks.values()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)
        settled = job.epoch
        time.sleep(2.0)
        # The 10 s window's timer is due every task.window.ms (10 s here): no epoch in 2 s of quiet.
        assert job.epoch - settled <= 1
    finally:
        job.stop()



@pytest.mark.parametrize(
    ("master", "error", "message"),
    [
        ("spark//127.0.0.1:7077", ConfigError, "is not a Spark master URL"),
        ("locale[2]", ConfigError, "is not a Spark master URL"),
        ("spark://127.0.0.1:1", ServiceError, "does not answer at 127.0.0.1:1 after 3 tries"),
    ],
)
def test_a_bad_or_unreachable_spark_master_fails_in_one_line_before_spark_starts(
    system: EmbeddedSystem, master: str, error: type[Exception], message: str
) -> None:
    write_page_views(system, generate_page_views(10))
    started = time.monotonic()
    with pytest.raises(error, match=message):
        run(build_app(system, name="masterless"), {"spark.master": master})
    assert time.monotonic() - started < 20
