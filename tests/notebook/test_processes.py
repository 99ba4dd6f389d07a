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
