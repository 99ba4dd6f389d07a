"""``samza-nb run``, ``plan`` and ``drain`` against the quickstart application."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from samza_nb.cli import main
from samza_nb.coordination.embedded_lease import EmbeddedJobLease
from samza_nb.drain import read_drain_notifications, read_run_id
from samza_nb.examples.page_views import expected_counts, generate_page_views, write_page_views
from samza_nb.job import Job
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.runtime.checkpoints import CheckpointStore
from samza_nb.systems import EmbeddedSystem

QUICKSTART = "samza_nb.examples.page_views:app"


@pytest.fixture
def samza_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private $SAMZA_NB_HOME, so the quickstart's default embedded system lives in tmp."""
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path))
    return tmp_path


def _totals(system: EmbeddedSystem) -> dict[str, int]:
    frame = system.read("page-counts")
    return {str(k): int(v) for k, v in frame.groupby("key")["value"].sum().items()}


def test_plan_prints_the_stages(samza_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", QUICKSTART]) == 0
    out = capsys.readouterr().out
    assert "2 stages" in out
    assert "partition_by-by-page" in out


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("task.name.grouper.factory=host-afinity", "unknown task grouper 'host-afinity'; did you mean 'host-affinity'?"),
        ("job.systemstreampartition.grouper.factory=group-by-partiton", "unknown SSP grouper 'group-by-partiton'"),
        ("metadata.store.factory=zookeper", "unknown metadata store 'zookeper'; did you mean 'zookeeper'?"),
        ("task.processing.guarantee=exactly-twice", "use 'at-least-once' or 'exactly-once'"),
        ("job.host-affinity.enabled=maybe", "true or false (yes/no, on/off and 1/0 are read too)"),
    ],
)
def test_plan_refuses_what_run_would(
    samza_home: Path, capsys: pytest.CaptureFixture[str], setting: str, said: str
) -> None:
    assert main(["plan", QUICKSTART, "--set", setting]) == 1
    assert said in capsys.readouterr().err


def test_plan_as_json_lists_streams_and_stages(samza_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", QUICKSTART, "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert len(plan["stages"]) == 2
    assert "page-views-1-partition_by-by-page" in json.dumps(plan)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("no_such_module:app", "no module named 'no_such_module'"),
        # What the module defines is listed, not what it imports.
        ("samza_nb.examples.page_views:nope", "has no attribute 'nope'; it has ['app', 'build_app'"),
        # A script's main() is not run to see what it returns.
        ("samza_nb.examples.page_views:main", "declared to return int, not a StreamApplication: not called"),
        ("samza_nb.examples.page_views", "must be written module:attribute"),
        ("samza_nb.examples.page_views:COUNTRIES", "not a StreamApplication"),
    ],
)
def test_a_bad_application_name_is_one_clear_line(
    samza_home: Path, capsys: pytest.CaptureFixture[str], spec: str, fragment: str
) -> None:
    assert main(["plan", spec]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("samza-nb: error:")
    assert fragment in err
    assert "\n" not in err


def test_an_application_whose_module_imports_a_missing_package_says_so(
    samza_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "needs_a_package.py").write_text("import no_such_package_here\napp = None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["plan", "needs_a_package:app"]) == 1
    assert "its module 'needs_a_package' imports 'no_such_package_here', which is not installed" in capsys.readouterr().err


def test_a_factory_that_raises_or_takes_arguments_is_one_line_naming_it(
    samza_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "factories.py").write_text(
        "def broken():\n    raise RuntimeError('factory broke')\n\n"
        "def needs(x):\n    return None\n\n"
        "def inner_type_error():\n    return len(3)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for spec, fragment in (
        ("factories:broken", f"factories:broken raised while building the application at {tmp_path}/factories.py:2: "
                             "RuntimeError: factory broke"),
        ("factories:needs", "factories:needs must be callable with no arguments"),
        ("factories:inner_type_error", "raised while building the application at"),
    ):
        assert main(["plan", spec]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("samza-nb: error:") and fragment in err and "\n" not in err


def test_a_bad_until_is_refused_before_the_plan_prints(samza_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", QUICKSTART, "--until", "bogus"]) == 1
    captured = capsys.readouterr()
    assert "until must be one of" in captured.err and "ExecutionPlan" not in captured.out


def test_a_config_file_with_an_unknown_key_names_it(
    samza_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    properties = tmp_path / "job.properties"
    properties.write_text("# the job\njob.contaner.count=2\n", encoding="utf-8")
    assert main(["plan", QUICKSTART, "--config", str(properties)]) == 1
    err = capsys.readouterr().err
    assert "job.contaner.count" in err
    assert "job.container.count" in err  # did you mean
    assert f"{properties}:2: unknown config key" in err  # the file and its line


@pytest.mark.parametrize("command", ["plan", "drain", "reset"])
def test_a_misspelled_coordinator_is_refused_by_every_command(
    samza_home: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # reset would otherwise delete the local job home of a job whose checkpoints are elsewhere.
    assert main([command, QUICKSTART, "--set", "job.coordinator.factory=zk"]) == 1
    assert "unknown job.coordinator.factory 'zk'; known: azure, embedded, zookeeper" in capsys.readouterr().err


def test_a_config_file_that_is_not_utf8_names_it(samza_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    properties = tmp_path / "job.properties"
    properties.write_bytes(b"\xff\xfej\x00o\x00b\x00")
    assert main(["plan", QUICKSTART, "--config", str(properties)]) == 1
    err = capsys.readouterr().err
    assert f"{properties}: not UTF-8 text" in err and "Traceback" not in err


def test_run_a_missing_input_says_how_to_create_it(samza_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", QUICKSTART]) == 1
    assert "create_stream('page-views'" in capsys.readouterr().err


@pytest.mark.spark
def test_run_counts_every_page_view(
    spark: object,
    samza_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = generate_page_views(3_000, seed=3)
    system = EmbeddedSystem("embedded", path=samza_home / "embedded")
    write_page_views(system, events)
    properties = tmp_path / "job.properties"
    properties.write_text("task.max.epoch.messages=400\n", encoding="utf-8")
    statuses: list[str] = []
    status = Job.status
    monkeypatch.setattr(Job, "status", lambda job: statuses.append(job.state) or status(job))
    code = main(["run", QUICKSTART, "--config", str(properties), "--set", "app.run.id=cli-run",
                 "--progress-interval", "0.1"])
    out = capsys.readouterr().out
    assert code == 0
    # The loop that waits for the end asks the job's state, which reads no store; the whole
    # status (every checkpoint, every input's end) is read once, when the job has ended.
    assert statuses == ["finished"], statuses
    assert "job finished" in out
    assert "store restores from changelogs: 0" in out
    # No progress line twice (the loop and the end both printed the last one); the rate aside,
    # as it moves with the clock.
    progress = [re.sub(r"[\d,]+ msg/s", "", line) for line in out.splitlines() if line.startswith("epoch ")]
    assert len(progress) == len(set(progress)), progress
    assert progress[-1].endswith("finished")
    assert _totals(system) == expected_counts(events)
    store = EmbeddedMetadataStore(samza_home / "embedded" / "jobs" / "page-views-1" / "metadata.sqlite3")
    assert read_run_id(store) == "cli-run"
    store.close()
    # The job has finished: a drain is refused, and no notification waits for its next run.
    assert main(["drain", QUICKSTART, "--wait"]) == 1
    assert "the job is not running (no processor of it is live), so there is nothing to drain" in capsys.readouterr().err
    store = EmbeddedMetadataStore(samza_home / "embedded" / "jobs" / "page-views-1" / "metadata.sqlite3")
    assert read_drain_notifications(store) == []
    store.close()


@pytest.mark.spark
def test_drain_stops_a_running_job_from_another_command(
    spark: object, samza_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = generate_page_views(2_000, seed=5)
    system = EmbeddedSystem("embedded", path=samza_home / "embedded")
    write_page_views(system, events, end=False)  # an unbounded input: only a drain ends the job
    codes: list[int] = []
    runner = threading.Thread(
        target=lambda: codes.append(
            main(["run", QUICKSTART, "--set", "job.drain-monitor.poll.interval.ms=100",
                  "--set", "task.max.epoch.messages=500", "--progress-interval", "0.1"])
        )
    )
    runner.start()
    job_home = samza_home / "embedded" / "jobs" / "page-views-1"
    deadline = time.monotonic() + 120
    # A drain stops reading where the job is: wait until it has read (committed) every view,
    # so the totals below are the whole input's. A drain before the first epoch (the command's
    # own JVM starting) would rightly count nothing.
    while not _has_read(job_home, len(events)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running(job_home)
    # A run id that is not the job's would be ignored, its notification left behind: refused.
    assert main(["drain", "--job-home", str(job_home), "--run-id", "bogus"]) == 1
    assert "run 'bogus' is not a run of this job (its runs: " in capsys.readouterr().err
    assert main(["drain", "--job-home", str(job_home), "--wait", "--timeout", "120"]) == 0
    runner.join(60)
    assert not runner.is_alive()
    assert codes == [0]
    out = capsys.readouterr().out
    assert "drained and stopped" in out
    assert "job drained" in out
    # Windows emit their panes on drain (SEP): every page view read is counted.
    assert _totals(system) == expected_counts(events)
    store = EmbeddedMetadataStore(job_home / "metadata.sqlite3")
    assert read_drain_notifications(store) == []
    store.close()


def _has_read(job_home: Path, views: int) -> bool:
    """Whether the job's checkpoints have every page view read."""
    if not (job_home / "metadata.sqlite3").exists():
        return False
    store = EmbeddedMetadataStore(job_home / "metadata.sqlite3")
    try:
        checkpoints = CheckpointStore(store).read_all().values()
        read = sum(
            offset
            for checkpoint in checkpoints
            for ssp, offset in checkpoint.offsets.items()
            if ssp.startswith("page-views#")
        )
        return read >= views
    finally:
        store.close()


def _running(job_home: Path) -> bool:
    """Whether a run holds the job home (the lease is taken right after its store is made)."""
    if not (job_home / "metadata.sqlite3").exists():
        return False
    store = EmbeddedMetadataStore(job_home / "metadata.sqlite3")
    try:
        return EmbeddedJobLease(job_home, store).holder() is not None
    finally:
        store.close()


def test_drain_without_a_job_is_a_clear_error(samza_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drain", "--job-home", str(samza_home / "nowhere")]) == 1
    assert "no metadata store at" in capsys.readouterr().err
    assert main(["drain"]) == 1
    assert "MODULE:APP" in capsys.readouterr().err


@pytest.mark.slow
def test_quickstart_on_the_standalone_cluster_restores_nothing_in_steady_state(
    spark_standalone: str, tmp_path: Path
) -> None:
    """Master + 2 workers from engine/: same counts as local, and no task rebuilds its
    window store from the changelog between epochs (restores stay 0 over many epochs)."""
    events = generate_page_views(4_000, seed=11)
    system = EmbeddedSystem("embedded", path=tmp_path / "embedded")
    write_page_views(system, events)
    env = {**os.environ, "SAMZA_NB_HOME": str(tmp_path)}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    result = subprocess.run(
        [sys.executable, "-m", "samza_nb.cli", "run", QUICKSTART,
         "--set", f"spark.master={spark_standalone}", "--set", "task.max.epoch.messages=300",
         "--set", "spark.executor.memory=512m", "--progress-interval", "0.2"],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "job finished" in result.stdout
    epochs = int(result.stdout.rsplit("after ", 1)[1].split()[0])
    assert epochs >= 4  # several epochs of window state carried from one to the next
    assert "store restores from changelogs: 0 (0 records)" in result.stdout
    assert _totals(system) == expected_counts(events)


def test_negative_wait_timeouts_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["run", QUICKSTART, "--wait", "--wait-timeout", "-1"], ["drain", QUICKSTART, "--timeout", "nan"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert "expected a number of seconds >= 0" in capsys.readouterr().err


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_a_run_after_its_epoch_in_one_line_with_a_signal_s_exit_code(
    samza_home: Path, sent: signal.Signals, code: int
) -> None:
    events = generate_page_views(3_000, seed=4)
    write_page_views(EmbeddedSystem("embedded", path=samza_home / "embedded"), events, end=False)
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    process = subprocess.Popen(
        [sys.executable, "-m", "samza_nb.cli", "run", QUICKSTART, "--until", "forever",
         "--set", "task.max.epoch.messages=500", "--progress-interval", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:  # until an epoch committed: Spark and the workers are up
            words = line.split()
            if words[:1] == ["epoch"] and int(words[1]) >= 2:
                break
        process.send_signal(sent)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == code, err
    assert "job stopped after" in out
    for noise in ("Traceback", "BrokenPipe", "py4j", "reentrant"):
        assert noise not in err, err


def test_a_secret_given_with_set_is_used_with_a_warning_never_echoed(
    samza_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", QUICKSTART, "--set", "systems.kafka.consumer.sasl.password=hunter2hunter2"]) == 0
    captured = capsys.readouterr()
    assert "warning: systems.kafka.consumer.sasl.password holds a secret, on a command line" in captured.err
    assert "hunter2" not in captured.err + captured.out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--processors", "5000"], "processors must be at most 1024"),
        (["--grouper", "host-afinity"], "did you mean 'host-affinity'?"),
    ],
)
def test_run_checks_its_options_before_it_prints_the_plan(
    samza_home: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert main(["run", QUICKSTART, *options]) == 1
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_services_status_with_nothing_running_names_no_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAMZA_NB_SERVICES_DIR", str(tmp_path / "services"))
    monkeypatch.setenv("SAMZA_NB_SERVICES_ENV", str(tmp_path / "services" / "services.env"))
    for key in ("SAMZA_NB_ZK_CONNECT", "SAMZA_NB_KAFKA_BOOTSTRAP", "SAMZA_NB_AZURE_CONNECTION_STRING"):
        monkeypatch.delenv(key, raising=False)
    assert main(["services", "status"]) == 0
    assert "env file   none (nothing runs)" in capsys.readouterr().out
