"""ZooKeeper outages under a running processor (issue 43, item 3): the test's own ZooKeeper
server is stopped (SIGKILL, as a crashed host) and started again on the same port and data.
An outage shorter than the session timeout is waited out with one status line (kazoo's own
lines while it reconnects are not shown) and the job finishes with the plain-Python counts; a
longer one ends the processor, bounded, with that status line and one error line naming the
ZooKeeper address and how long it waited."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samza_nb.examples.page_views import expected_counts, generate_page_views, write_page_views
from samza_nb.metadata.zookeeper import ZkMetadataStore
from samza_nb.runtime.checkpoints import CheckpointStore
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import OwnZooKeeper

pytestmark = [pytest.mark.services, pytest.mark.slow]

_MODULE = """
from samza_nb.examples.page_views import build_app
from samza_nb.systems import EmbeddedSystem
app = build_app(EmbeddedSystem("embedded", path={path!r}), name="zk-outage")
"""


def _processor(tmp_path: Path, connect: str, session_ms: int) -> subprocess.Popen[str]:
    settings = {
        "job.coordinator.factory": "zookeeper",
        "job.coordinator.zk.connect": connect,
        "job.coordinator.zk.session.timeout.ms": str(session_ms),
        "processor.id": "p1",
        "processor.locations": "host-p1",
        "task.max.epoch.messages": "40",
        "task.epoch.min.interval.ms": "200",
    }
    argv = [sys.executable, "-m", "samza_nb.cli", "run", "zkjob:app", "--executor", "local"]
    for key, value in settings.items():
        argv += ["--set", f"{key}={value}"]
    return subprocess.Popen(
        argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _committed(connect: str) -> int:
    store = ZkMetadataStore(connect, "/app-zk-outage-1/ApplicationRunnerData")
    try:
        return sum(cp.seq for cp in CheckpointStore(store).read_all().values())
    finally:
        store.close()


def _until_committed(connect: str, process: subprocess.Popen[str], at_least: int) -> None:
    deadline = time.monotonic() + 120
    while _committed(connect) < at_least:
        if process.poll() is not None:
            # Whole (an assertion's message is cut short): the process's last lines say why.
            out, err = process.communicate()
            pytest.fail(f"the processor exited {process.returncode}:\n{out}\n{err}", pytrace=False)
        assert time.monotonic() < deadline, "no commits in 120 s"
        time.sleep(0.2)


@pytest.fixture
def job(tmp_path: Path) -> tuple[EmbeddedSystem, list[dict[str, object]]]:
    log = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=log)
    events = generate_page_views(2_000, seed=17)
    write_page_views(system, events, end=False)
    (tmp_path / "zkjob.py").write_text(_MODULE.format(path=str(log)))
    return system, events


def _status(connect: str, session_s: int) -> str:
    return f"ZooKeeper {connect}: connection lost; waiting up to {session_s} s (the session timeout) for it to come back"


def _end(process: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    try:
        return process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


def test_an_outage_shorter_than_the_session_timeout_is_waited_out(
    own_zookeeper: OwnZooKeeper, job: tuple[EmbeddedSystem, list[dict[str, object]]], tmp_path: Path
) -> None:
    system, events = job
    # 5 s away, plus the restarted server's start (a JVM: up to 15 s on the suite's loaded two
    # cores); a session timeout of 20 s expired once (CI62), 40 s keeps this the short outage.
    process = _processor(tmp_path, own_zookeeper.connect, session_ms=40_000)
    try:
        _until_committed(own_zookeeper.connect, process, 4)
        own_zookeeper.stop()
        time.sleep(5)
        own_zookeeper.start_again()
        after = _committed(own_zookeeper.connect)
        _until_committed(own_zookeeper.connect, process, after + 1)
        system.end_stream("page-views")
    finally:
        out, err = _end(process, 180)
    assert process.returncode == 0, err
    assert "job finished" in out
    assert [line for line in err.splitlines() if line.strip()] == [_status(own_zookeeper.connect, 40)]
    got = system.read_frame("page-counts").groupby("key")["value"].sum().to_dict()
    assert got == expected_counts(events)


def test_an_outage_longer_than_the_session_timeout_is_one_line_naming_zookeeper(
    own_zookeeper: OwnZooKeeper, job: tuple[EmbeddedSystem, list[dict[str, object]]], tmp_path: Path
) -> None:
    process = _processor(tmp_path, own_zookeeper.connect, session_ms=4_000)
    try:
        _until_committed(own_zookeeper.connect, process, 4)
        own_zookeeper.stop()
        stopped = time.monotonic()
        _out, err = _end(process, 120)
        waited = time.monotonic() - stopped
    finally:
        if process.poll() is None:
            _end(process, 1)
    assert process.returncode == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0] == _status(own_zookeeper.connect, 4), err
    errors = [line for line in lines if line.startswith("samza-nb: error: ")]
    assert len(errors) == 1, err
    # The address, and the bound waited: twice the call timeout (the session timeout) of a
    # ZooKeeper call, or the session timeout of the connection.
    assert re.search(
        rf"ZooKeeper {re.escape(own_zookeeper.connect)}: .* failed after at most \d+ tries in 8 s "
        rf"|disconnected from ZooKeeper {re.escape(own_zookeeper.connect)} for more than the session timeout \(4 s\)",
        errors[0],
    ), errors[0]
    assert waited < 60, f"the processor ended {waited:.0f} s after ZooKeeper stopped"
