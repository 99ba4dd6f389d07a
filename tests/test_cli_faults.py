"""An operator's faults reported by ``samza-nb`` in one line each (issue 43): a job home that
cannot be created, a damaged metadata store, a signal to the whole process group mid-epoch."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from samza_nb.cli import main
from samza_nb.examples.page_views import generate_page_views, write_page_views
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.systems import EmbeddedSystem

QUICKSTART = "samza_nb.examples.page_views:app"


@pytest.fixture
def samza_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private $SAMZA_NB_HOME holding the quickstart's input."""
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path))
    write_page_views(EmbeddedSystem("embedded", path=tmp_path / "embedded"), generate_page_views(300, seed=2))
    return tmp_path


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def test_a_job_home_that_cannot_be_created_is_one_line_naming_it(
    samza_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = samza_home / "a-file"
    blocker.write_text("in the way")
    assert main(["run", QUICKSTART, "--set", f"job.home={blocker}/home"]) == 1
    captured = capsys.readouterr()
    assert _error_lines(captured.err) == [
        f"samza-nb: error: job.home {blocker}/home cannot be created: Not a directory"
    ]
    assert captured.out == ""  # refused before the plan printed


def test_run_from_python_with_a_job_home_that_cannot_be_created_is_one_config_error(
    samza_home: Path,
) -> None:
    from samza_nb.errors import ConfigError
    from samza_nb.examples.page_views import app
    from samza_nb.testing import run_local

    blocker = samza_home / "a-file"
    blocker.write_text("in the way")
    with pytest.raises(ConfigError) as raised:
        run_local(app(), {"job.home": f"{blocker}/home"})
    assert str(raised.value) == f"job.home {blocker}/home cannot be created: Not a directory"


def test_a_truncated_metadata_store_says_how_to_recover(samza_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = samza_home / "embedded" / "jobs" / "page-views-1"
    home.mkdir(parents=True)
    store = EmbeddedMetadataStore(home / "metadata.sqlite3")
    for index in range(200):
        store.put(f"checkpoint-{index}", b"x" * 500)
    store.flush()
    store.close()
    path = home / "metadata.sqlite3"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert main(["run", QUICKSTART, "--executor", "local"]) == 1
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"samza-nb: error: embedded metadata store '{path}'")
    assert lines[0].endswith(
        "; the file is damaged (truncated or overwritten): put back a copy of it, or move it away and "
        f"start the job over from its inputs with `samza-nb reset {QUICKSTART} --yes`"
    )
    # The way out works: moved away, the job starts over and counts every view once.
    path.rename(samza_home / "damaged.sqlite3")
    assert main(["reset", QUICKSTART, "--yes"]) == 0
    assert main(["run", QUICKSTART, "--executor", "local"]) == 0
    assert "job finished" in capsys.readouterr().out


@pytest.mark.spark
def test_sigterm_to_the_process_group_mid_epoch_is_one_line_and_exit_143(samza_home: Path) -> None:
    # A terminal's Ctrl-C or a service manager's stop signals the whole group: Spark's JVM
    # stops under the epoch in flight, which cannot commit then.
    system = EmbeddedSystem("embedded", path=samza_home / "embedded")
    system.delete_stream("page-views")
    write_page_views(system, generate_page_views(200_000, seed=3), end=False)
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    process = subprocess.Popen(
        [sys.executable, "-m", "samza_nb.cli", "run", QUICKSTART, "--until", "forever",
         "--set", "task.max.epoch.messages=20000", "--progress-interval", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:  # an epoch committed: the next one is in flight
            if line.split()[:1] == ["epoch"]:
                break
        os.killpg(process.pid, signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 143, err
    lines = _error_lines(err)
    # Either the epoch in flight committed before Spark went (the normal stop's summary), or
    # it did not, and one line says so.
    if lines:
        assert len(lines) == 1, lines
        assert re.fullmatch(
            r"samza-nb: stopped by SIGTERM; Spark ended with it \(\w+\), so the epoch in flight "
            r"did not commit and the next run repeats it",
            lines[0],
        ), lines
    else:
        assert "job stopped after" in out


def test_the_text_of_a_java_error_whose_jvm_stopped_is_its_type_and_short_message() -> None:
    # A py4j Java error asks the JVM for its text; after a signal stopped the JVM that raises,
    # and a job's status (what `samza-nb run` prints each second) must still be readable.
    from samza_nb.errors import error_text

    class JavaError(Exception):
        errmsg = "An error occurred while calling o123.collect.\n"

        def __str__(self) -> str:
            raise ConnectionRefusedError(111, "Connection refused")

    assert error_text(JavaError()) == "JavaError: An error occurred while calling o123.collect."
    assert error_text(ValueError("plain")) == "plain"
