"""The numbers a job shows are right: lag counts messages (not control messages), every
operator counts what it skipped or dropped, and a failure names the user's raising line.
Run on the in-process executor."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import JobInterruptedError, JobTimeoutError, TaskError
from samza_nb.job.handle import Job
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def _events(system: EmbeddedSystem, count: int, partitions: int = 4) -> None:
    system.create_stream("events", partitions)
    system.write("events", list(range(count)))
    for partition in range(partitions):
        system.write_watermark("events", partition, 1_000)
    system.end_stream("events")


def test_lag_leaves_out_watermarks_and_end_of_stream_markers(system: EmbeddedSystem) -> None:
    _events(system, 2_000)
    # Eight control messages follow the 2,000 events (a watermark and an end-of-stream per
    # partition): the newest offsets add up to 2,008.
    assert sum(system.newest_offsets("events").values()) == 2_008
    assert sum(system.control_messages("events", p, 0, 10**6) for p in range(4)) == 8
    app = StreamApplication("lagging")
    out = app.output(system.output("out", partitions=4))
    app.input(system.input("events", partitions=4)).send_to(out)
    # One epoch of 100 messages per partition, then the job is looked at.
    job = run_local(app, {"task.max.epoch.messages": "100"}, until=1)
    metrics = job.metrics()
    assert metrics["streams"]["events"]["in"] == 400
    assert metrics["streams"]["events"]["lag"] == 1_600
    assert sum(task["lag"] for task in job.status().tasks.values()) == 1_600
    done = run_local(app, {"task.max.epoch.messages": "100"})
    assert done.metrics()["streams"]["events"]["lag"] == 0


def test_retention_forgets_the_control_offsets_it_deleted(system: EmbeddedSystem) -> None:
    _events(system, 8, partitions=1)
    assert system.control_messages("events", 0, 0, 10) == 2
    system.delete_before("events", 0, 9)
    assert system.control_messages("events", 0, 0, 10) == 1  # the end-of-stream at offset 9


def _keep_odd(n: int) -> int | None:
    return n if n % 2 else None


def _no_sevens(n: int) -> int:
    if n % 10 == 7:
        msg = f"{n} ends in 7"
        raise ValueError(msg)
    return n


def _counting_app(system: EmbeddedSystem) -> StreamApplication:
    app = StreamApplication("counting")
    out = app.output(system.output("out", partitions=1))
    (
        app.input(system.input("events", partitions=1))
        .map(_keep_odd)
        .map(_no_sevens)
        .send_to(out)
    )
    return app


def _map_ids(job: Job) -> list[str]:
    """The ids of the two maps, in the order the app declares them."""
    return [op_id for op_id in job.plan.operators if "-map-" in op_id]


def test_operators_count_skipped_dropped_and_failed_messages(system: EmbeddedSystem) -> None:
    _events(system, 40, partitions=1)
    app = _counting_app(system)
    job = run_local(app, {"task.errors.skip": "true"})
    counters = job.metrics()["operator_counters"]
    odd, sevens = _map_ids(job)
    counters = {"odd": counters[odd], "sevens": counters[sevens]}
    assert counters["odd"] == {"in": 40, "skipped": 0, "dropped": 20, "errors": 0}
    assert counters["sevens"] == {"in": 20, "skipped": 4, "dropped": 0, "errors": 4}
    status = job.status()
    assert status.operators == {
        odd: {"skipped": 0, "dropped": 20, "errors": 0},
        sevens: {"skipped": 4, "dropped": 0, "errors": 4},
    }
    assert "dropped (None)" in status._repr_html_()
    assert sorted(job.collect("out")["value"]) == [n for n in range(40) if n % 2 and n % 10 != 7]


def test_a_failure_names_the_raising_line_and_keeps_the_job(system: EmbeddedSystem) -> None:
    _events(system, 40, partitions=1)
    app = _counting_app(system)
    with pytest.raises(TaskError) as raised:
        run_local(app)
    error = raised.value
    job: Any = error.job
    sevens = _map_ids(job)[1]
    assert (error.op_id, error.ssp, error.offset) == (sevens, "events#0", 7)
    assert error.raised_at is not None
    filename, lineno, line = error.raised_at
    # The user's own raising line: this file's ``raise``, not where the operator was declared.
    assert Path(filename).name == "test_job_numbers.py" and line == "raise ValueError(msg)"
    assert f"test_job_numbers.py:{lineno}" in str(error)
    assert error.operator_location is not None and "test_job_numbers.py" in error.operator_location
    assert "ValueError: 7 ends in 7" in (error.worker_traceback or "")
    # The handle is reachable from the error: run() raised before returning it.
    assert isinstance(job, Job) and job.status().state == "failed"
    assert job.metrics()["operator_counters"][sevens]["errors"] == 1
    assert job.status().operators[sevens]["errors"] == 1


def test_ctrl_c_in_a_foreground_run_stops_the_job_and_hands_it_over(
    system: EmbeddedSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    system.create_stream("open", 2)
    system.write("open", list(range(50)))
    app = StreamApplication("interrupted")
    out = app.output(system.output("out", partitions=2))
    app.input(system.input("open", partitions=2)).send_to(out)
    real_wait = Job.wait

    def interrupted_wait(job: Job, timeout: float | None = None) -> Any:
        # Ctrl-C once the job committed an epoch.
        deadline = time.monotonic() + 60
        while job.epoch < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        raise KeyboardInterrupt

    monkeypatch.setattr(Job, "wait", interrupted_wait)
    with pytest.raises(KeyboardInterrupt) as raised:
        run_local(app, until="forever")
    error = raised.value
    assert isinstance(error, JobInterruptedError) and "its checkpoints are committed" in str(error)
    job = error.job
    assert isinstance(job, Job) and job.status().state == "stopped"
    assert not any(processor.alive for processor in job._processors.values())
    # A new run continues from the committed checkpoints: nothing is read twice.
    monkeypatch.setattr(Job, "wait", real_wait)
    system.end_stream("open")
    run_local(app)
    assert sorted(system.read("out")["value"]) == list(range(50))


def test_ctrl_c_during_wait_of_a_background_job_leaves_it_running_and_wait_waits_again(
    system: EmbeddedSystem,
) -> None:
    system.create_stream("slow", 2)
    system.write("slow", list(range(400)))
    # The input ends only after the interrupt, so the job cannot finish before it (a starved
    # test thread once saw epoch 2 so late that the job ended within the timer's 0.2 s).
    app = StreamApplication("waited", config={"task.max.epoch.messages": "20"})

    def slowly(n: int) -> int:
        time.sleep(0.002)
        return n

    app.input(system.input("slow", partitions=2)).map(slowly).send_to(app.output(system.output("out", partitions=2)))
    # Ctrl-C as a kernel's Interrupt delivers it: Python's own SIGINT handler, whatever an
    # earlier test of this process left installed (CI12 once saw this wait outlast the signal),
    # and the signal sent to the main thread, the one that waits.
    left = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        job = run_local(app, background=True)
        deadline = time.monotonic() + 60
        while job.epoch < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        main = threading.main_thread().ident
        assert main is not None
        threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()
        try:
            with pytest.raises(KeyboardInterrupt):
                job.wait(timeout=60)
        except JobTimeoutError as error:
            job.stop()
            pytest.fail(f"Ctrl-C did not end the wait ({error}); SIGINT's handler before the test: {left!r}")
    finally:
        signal.signal(signal.SIGINT, left)
    assert job.status().state == "running"  # the interrupt ended the wait, not the job
    system.end_stream("slow")
    assert job.wait(timeout=120).state == "finished"
    assert sorted(system.read("out")["value"]) == list(range(400))


def test_until_a_number_of_epochs_ends_when_a_processor_got_no_container(tmp_path: Path) -> None:
    from samza_nb.examples.page_views import build_app, generate_page_views, write_page_views

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    write_page_views(system, generate_page_views(200), end=False)
    config = {"processor.locations": "a,b", "job.home": str(tmp_path / "home")}
    job = run_local(build_app(system), config, processors=2, grouper="single-container", until=2, background=True)
    try:
        status = job.wait(timeout=30)
    finally:
        job.stop()
    assert list(job.job_model.containers) == ["0"]  # processor 1 has nothing to run
    assert status.state == "finished"
    assert {pid: processor.epoch for pid, processor in job._processors.items()} == {"0": 2, "1": 2}
