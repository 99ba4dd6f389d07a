"""Processor processes started from a notebook die with it, and report their log and exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from samza_nb.errors import JobError
from samza_nb.notebook.processes import start_processor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not reaped yet) counts as gone.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_a_processor_process_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    (tmp_path / "slow_job.py").write_text("import time\ntime.sleep(120)\napp = None\n")
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import time
                from samza_nb.notebook.processes import start_processor
                process = start_processor("slow_job:app", {{}}, processor_id="p1", location="here", cwd={str(tmp_path)!r})
                print(process.pid, flush=True)
                time.sleep(120)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)  # a kernel killed without any cleanup
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_the_log_and_exit_of_a_failing_processor(tmp_path: Path) -> None:
    process = start_processor("no_such_module:app", {}, processor_id="p9", location="here", cwd=tmp_path)
    assert process.wait(60) != 0
    assert process.log_path == tmp_path / "processor-logs" / "p9.log"
    assert "no_such_module" in process.log()
    with pytest.raises(JobError, match="p9"):
        process.wait_for("never printed", timeout=5)


def test_secret_settings_reach_the_process_but_not_its_command_line(tmp_path: Path) -> None:
    # Every user of the machine reads a command line (ps, /proc/<pid>/cmdline): a secret goes
    # in a file only this user reads, which the processor takes as --config and which is
    # removed once it has ended. The job runs (so it read the file: a missing --config file
    # fails it at once).
    (tmp_path / "tiny_job.py").write_text(
        textwrap.dedent(
            f"""
            from samza_nb.examples.page_views import build_app, generate_page_views, write_page_views
            from samza_nb.systems import EmbeddedSystem
            system = EmbeddedSystem("embedded", path={str(tmp_path / "log")!r})
            if system.partition_count("page-views") is None:
                write_page_views(system, generate_page_views(50))
            app = build_app(system)
            """
        )
    )
    pem = "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEA\n-----END PRIVATE KEY-----"
    settings = {
        "systems.kafka.consumer.sasl.password": "hunter2-never-shown",
        "systems.kafka.consumer.ssl.key.pem": pem,
        "job.home": str(tmp_path / "home"),
    }
    process = start_processor("tiny_job:app", settings, processor_id="p1", location="here", cwd=tmp_path)
    try:
        command_line = Path(f"/proc/{process.pid}/cmdline").read_bytes().decode(errors="replace")
        assert "hunter2-never-shown" not in command_line and "PRIVATE KEY" not in command_line
        assert "job.home=" in command_line  # what is not secret stays visible, for ps
        secrets = process._secrets_path
        assert secrets is not None and secrets.exists()
        assert secrets.stat().st_mode & 0o777 == 0o600
        assert process.wait(120) == 0, process.log()
    finally:
        if process.alive:
            process.kill()
    assert not secrets.exists()
    assert "hunter2-never-shown" not in process.log(1_000_000)


def test_a_processor_restarted_under_its_id_keeps_its_own_secrets_file(tmp_path: Path) -> None:
    (tmp_path / "idle_job.py").write_text("import time\ntime.sleep(120)\napp = None\n")
    settings = {"systems.kafka.consumer.sasl.password": "hunter2-never-shown"}
    old = start_processor("idle_job:app", settings, processor_id="p1", location="here", cwd=tmp_path)
    new = start_processor("idle_job:app", settings, processor_id="p1", location="here", cwd=tmp_path)
    try:
        assert old._secrets_path != new._secrets_path
        old.kill()  # the rolling restart's second step
        assert new._secrets_path is not None and new._secrets_path.exists()
    finally:
        new.kill()
    assert not any(tmp_path.glob("processor-logs/*.secret-config.json"))


def test_processor_logs_are_owner_only_even_where_an_older_run_left_them_wider(tmp_path: Path) -> None:
    logs = tmp_path / "processor-logs"
    logs.mkdir(mode=0o755)
    (logs / "p8.log").write_text("an older run's line\n")
    (logs / "p8.log").chmod(0o644)
    process = start_processor("no_such_module:app", {}, processor_id="p8", location="here", cwd=tmp_path)
    assert process.wait(60) != 0
    assert logs.stat().st_mode & 0o777 == 0o700
    assert process.log_path.stat().st_mode & 0o777 == 0o600
    assert process.log().startswith("an older run's line\n")  # appended to, not replaced
    fresh = start_processor("no_such_module:app", {}, processor_id="p7", location="here", cwd=tmp_path)
    assert fresh.wait(60) != 0
    assert sorted(path.name for path in logs.iterdir()) == ["p7.log", "p8.log"]
    assert fresh.log_path.stat().st_mode & 0o777 == 0o600
