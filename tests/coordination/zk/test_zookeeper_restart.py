"""A ZooKeeper restart under a running job (issue 43, item 3): the test's own ZooKeeper server
is stopped for ~10 s and started again on the same port and data. ZooKeeper keeps watches per
connection and kazoo does not set them again on a new one, so a follower's one-shot watch on
its leader is gone after the restart; when the leader then leaves, the follower must still
take over and finish at end-of-stream (it hung), with the plain-Python counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
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
app = build_app(EmbeddedSystem("embedded", path={path!r}), name="zk-restart")
"""
_OUTAGE_S = 10.0


def _processor(tmp_path: Path, connect: str, pid: str, location: str) -> subprocess.Popen[bytes]:
    settings = {
        "job.coordinator.factory": "zookeeper",
        "job.coordinator.zk.connect": connect,
        "job.coordinator.zk.session.timeout.ms": "20000",
        "job.debounce.time.ms": "500",
        "processor.id": pid,
        "processor.locations": location,
        "task.max.epoch.messages": "40",
        "task.epoch.min.interval.ms": "200",
    }
    argv = [sys.executable, "-m", "samza_nb.cli", "run", "zkjob:app", "--executor", "local"]
    for key, value in settings.items():
        argv += ["--set", f"{key}={value}"]
    with (tmp_path / f"{pid}.log").open("ab") as log:
        return subprocess.Popen(argv, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _committed(connect: str) -> int:
    store = ZkMetadataStore(connect, "/app-zk-restart-1/ApplicationRunnerData")
    try:
        return sum(cp.seq for cp in CheckpointStore(store).read_all().values())
    finally:
        store.close()


def _told(log: Path) -> str:
    """What a processor said, its progress lines after the restart aside but the last."""
    lines = log.read_text(errors="replace").splitlines()
    kept = [line for line in lines if not line.startswith(("epoch ", "  "))]
    return "\n".join([*kept, *lines[-3:]])[-4000:]


def _state(connect: str) -> str:
    """The job's checkpoints (offsets, control state) and finished tasks, for a failure message."""
    store = ZkMetadataStore(connect, "/app-zk-restart-1/ApplicationRunnerData")
    try:
        checkpoints = CheckpointStore(store).read_all()
        lines = [f"{task}: seq {cp.seq} offsets {cp.offsets} control {cp.control}" for task, cp in sorted(checkpoints.items())]
        lines += [f"{key} = {value!r}" for key, value in sorted(store.all().items()) if "done" in key]
        return "\n".join(lines)
    finally:
        store.close()


def _wait_for(what: str, done: Callable[[], bool], processes: dict[str, subprocess.Popen[bytes]],
              said: dict[str, Callable[[], str]], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s; {said}"
        for pid, process in processes.items():
            assert process.poll() is None, f"{pid} ended while waiting for {what}:\n{said[pid]()}"
        time.sleep(0.2)


def test_a_follower_takes_over_when_the_leader_leaves_after_a_zookeeper_restart(
    own_zookeeper: OwnZooKeeper, tmp_path: Path
) -> None:
    """p1 leads, p2 follows by a watch on p1's node. ZooKeeper restarts (sessions survive,
    the watches of the old connections do not); then p1 stops. p2 must see it go, take its
    tasks and finish at end-of-stream, every page counted once."""
    log = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=log)
    events = generate_page_views(3_000, seed=31)
    write_page_views(system, events, end=False)  # open until p1 has left
    (tmp_path / "zkjob.py").write_text(_MODULE.format(path=str(log)))
    connect = own_zookeeper.connect
    processes = {"p1": _processor(tmp_path, connect, "p1", "host-p1")}
    said = {pid: lambda pid=pid: _told(tmp_path / f"{pid}.log") for pid in ("p1", "p2")}
    try:
        _wait_for("p1 commits", lambda: _committed(connect) >= 4, processes, said)
        processes["p2"] = _processor(tmp_path, connect, "p2", "host-p2")
        _wait_for("p2 joins", lambda: "processor p2 runs 2 tasks" in said["p2"](), processes, said)
        before = _committed(connect)
        _wait_for("p2 commits", lambda: _committed(connect) > before + 2, processes, said)
        own_zookeeper.stop()
        time.sleep(_OUTAGE_S)
        own_zookeeper.start_again()
        after = _committed(connect)
        _wait_for("a commit after the restart", lambda: _committed(connect) > after, processes, said)
        processes["p1"].send_signal(signal.SIGTERM)  # the processor alone: it leaves cleanly
        assert processes["p1"].wait(120) == 143, said["p1"]()
        system.end_stream("page-views")
        try:
            code = processes["p2"].wait(180)
        except subprocess.TimeoutExpired:
            pytest.fail(f"p2 still runs 180 s after p1 left:\n{said['p2']()}\n{_state(connect)}")
    finally:
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    assert code == 0, said["p2"]()
    assert "processor p2 runs 4 tasks" in said["p2"]() and "job finished" in said["p2"]()
    got = system.read_frame("page-counts").groupby("key")["value"].sum().to_dict()
    assert got == expected_counts(events)
