"""Standalone on ZooKeeper: processor processes (``samza-nb run`` with
``job.coordinator.factory=zookeeper``) elect a leader, agree on job models and share the work;
when one is SIGKILLed its tasks move to the survivor after the session timeout, and the outputs
still equal the plain-Python counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb.config import Config
from samza_nb.coordination.zk.observer import ZkJobObserver
from samza_nb.examples.page_views import expected_counts, generate_page_views, write_page_views
from samza_nb.examples.user_counts import expected_totals, generate_events, totals_of, write_events
from samza_nb.metadata.zookeeper import ZkMetadataStore
from samza_nb.runtime.checkpoints import CheckpointStore
from samza_nb.systems import EmbeddedSystem

pytestmark = [pytest.mark.services, pytest.mark.slow]

_MODULE = """
from samza_nb.examples.page_views import build_app
from samza_nb.systems import EmbeddedSystem
app = build_app(EmbeddedSystem("embedded", path={path!r}), name="zk-pages")
"""


def _settings(zk_connect: str) -> dict[str, str]:
    return {
        "job.coordinator.factory": "zookeeper",
        "job.coordinator.zk.connect": zk_connect,
        "job.coordinator.zk.session.timeout.ms": "4000",
        "job.debounce.time.ms": "500",
    }


#: Each processor's epochs read at most this many messages per task.
_EPOCH_MESSAGES = 40


def _processor(
    tmp_path: Path,
    zk_connect: str,
    pid: str,
    location: str,
    extra: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    until: str = "end-of-stream",
    executor: str = "spark",
) -> subprocess.Popen[bytes]:
    settings = {
        **(extra or {}),
        "job.coordinator.factory": "zookeeper",
        "job.coordinator.zk.connect": zk_connect,
        "job.coordinator.zk.session.timeout.ms": "4000",
        "job.debounce.time.ms": "500",
        "processor.id": pid,
        "processor.locations": location,
        "task.max.epoch.messages": str(_EPOCH_MESSAGES),
        "task.epoch.min.interval.ms": "200",
    }
    argv = [sys.executable, "-m", "samza_nb.cli", "run", "zkjob:app", "--executor", executor, "--until", until]
    for key, value in settings.items():
        argv += ["--set", f"{key}={value}"]
    return subprocess.Popen(
        argv,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **env} if env else None,
    )


def _committed(zk_connect: str) -> int:
    store = ZkMetadataStore(zk_connect, "/app-zk-pages-1/ApplicationRunnerData")
    try:
        return sum(cp.seq for cp in CheckpointStore(store).read_all().values())
    finally:
        store.close()


def _totals(system: EmbeddedSystem) -> dict[str, int]:
    return system.read_frame("page-counts").groupby("key")["value"].sum().to_dict()


def test_two_processor_processes_survive_the_death_of_one(zk_connect: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=log)
    events = generate_page_views(4_000, seed=17)
    write_page_views(system, events)
    (tmp_path / "zkjob.py").write_text(_MODULE.format(path=str(log)))
    survivor = _processor(tmp_path, zk_connect, "p1", "host-a")
    doomed = _processor(tmp_path, zk_connect, "p2", "host-b")
    try:
        deadline = time.monotonic() + 120
        while _committed(zk_connect) < 6:
            assert time.monotonic() < deadline, "the processors committed nothing in 120 s"
            for process in (doomed, survivor):
                if process.poll() is not None:
                    said = process.stdout.read().decode()[-3000:] if process.stdout else ""
                    pytest.fail(f"a processor ended (exit {process.returncode}) before the kill:\n{said}")
            time.sleep(0.1)
        os.killpg(doomed.pid, signal.SIGKILL)
        assert doomed.wait(30) == -signal.SIGKILL
        output, _ = survivor.communicate(timeout=240)
        assert survivor.returncode == 0, output.decode()[-3000:]
        assert b"job finished" in output
        # It said when it took over the dead processor's tasks.
        assert b"processor p1 runs 4 tasks: " in output and b"(took ['" in output, output.decode()[-3000:]
    finally:
        for process in (survivor, doomed):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    got, want = _totals(system), expected_counts(events)
    lost = {k: want[k] - got.get(k, 0) for k in want if got.get(k, 0) < want[k]}
    doubled = {k: got[k] - want.get(k, 0) for k in got if got[k] > want.get(k, 0)}
    assert got == want, f"lost {lost}, doubled {doubled}; batches {_batches(log)}; survivor said:\n{output.decode()[-2000:]}"


def test_a_crashed_epoch_consumed_and_deleted_downstream_is_not_appended_again(
    zk_connect: str, tmp_path: Path
) -> None:
    """The race behind rare doubled counts: p2 dies after appending its first epoch's
    intermediate batches; before its session times out, the leader's tasks read the batches
    of their partitions, commit, and retention deletes them. The leader then replays p2's
    pending plan: the repeat of a deleted batch must be refused (the embedded log remembers
    the highest sequence retention deleted per task), or the pages it carries count twice."""
    log = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=log)
    events = generate_page_views(2_000, seed=23)
    write_page_views(system, events)
    (tmp_path / "zkjob.py").write_text(_MODULE.format(path=str(log)))
    # p1 first, alone: it leads, so it owns retention and runs while p2's session lives on.
    # The kill point is in the task epoch: on the local executor it kills the processor
    # process itself (on Spark it would kill a Python worker, which the epoch survives).
    survivor = _processor(tmp_path, zk_connect, "p1", "host-a", executor="local")
    doomed = None
    try:
        deadline = time.monotonic() + 120
        while _committed(zk_connect) < 2:
            assert time.monotonic() < deadline, "p1 committed nothing in 120 s"
            assert survivor.poll() is None, "p1 ended before p2 started"
            time.sleep(0.1)
        doomed = _processor(
            tmp_path, zk_connect, "p2", "host-b", env={"SAMZA_NB_KILL_AT": "after-output-append"},
            executor="local",
        )
        assert doomed.wait(120) == -signal.SIGKILL, "p2 did not reach its kill point"
        output, _ = survivor.communicate(timeout=240)
        assert survivor.returncode == 0, output.decode()[-3000:]
    finally:
        for process in (survivor, doomed):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    got, want = _totals(system), expected_counts(events)
    doubled = {k: got[k] - want.get(k, 0) for k in got if got[k] > want.get(k, 0)}
    assert got == want, f"doubled {doubled}; batches {_batches(log)}"


def _batches(log: Path) -> list[tuple[int, str, int, int]]:
    import sqlite3

    db = sqlite3.connect(str(log / "log.sqlite3"))
    try:
        return list(db.execute(
            "SELECT partition, producer, producer_seq, count FROM batches WHERE stream = 'page-counts' "
            "ORDER BY partition, producer_seq"
        ))
    finally:
        db.close()


def _input_read(
    zk_connect: str, root: str = "/app-zk-pages-1/ApplicationRunnerData", prefix: str = "page-views#"
) -> int:
    store = ZkMetadataStore(zk_connect, root)
    try:
        return sum(
            offset
            for checkpoint in CheckpointStore(store).read_all().values()
            for key, offset in checkpoint.offsets.items()
            if key.startswith(prefix)
        )
    finally:
        store.close()


class _JobWatch:
    """One ZooKeeper session reading a running job's checkpoints and agreed model, cheap to
    poll (a session per read took seconds under load, as long as a small job runs)."""

    def __init__(self, zk_connect: str, app_name: str) -> None:
        self.store = ZkMetadataStore(zk_connect, f"/app-{app_name}-1/ApplicationRunnerData")
        self.checkpoints = CheckpointStore(self.store)
        self.observer = ZkJobObserver(zk_connect, Config({"app.name": app_name, "job.id": "1"}))

    def seqs(self) -> dict[str, int]:
        """Each task's committed epochs (the seq of its checkpoint)."""
        return {task: checkpoint.seq for task, checkpoint in self.checkpoints.read_all().items()}

    def read(self, prefix: str) -> int:
        """Messages the tasks have read of the inputs whose SSP keys start with ``prefix``."""
        return sum(
            offset
            for checkpoint in self.checkpoints.read_all().values()
            for key, offset in checkpoint.offsets.items()
            if key.startswith(prefix)
        )

    def agreed_processors(self) -> set[str]:
        """The processors of the newest model all of them agreed on (none before one)."""
        observation = self.observer.observe()
        agreed = next((v.model for v in observation.versions if v.version == observation.active), None)
        return set(agreed.containers) if agreed is not None else set()

    def close(self) -> None:
        self.observer.close()
        self.store.close()


def test_samza_nb_drain_stops_every_processor_process(zk_connect: str, tmp_path: Path) -> None:
    log = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=log)
    events = generate_page_views(1_000, seed=19)
    write_page_views(system, events, end=False)  # an open input: only a drain ends the job
    (tmp_path / "zkjob.py").write_text(_MODULE.format(path=str(log)))
    processes = [_processor(tmp_path, zk_connect, f"p{i}", f"host-{i}") for i in (1, 2)]
    try:
        deadline = time.monotonic() + 120
        while _input_read(zk_connect) < len(events):
            assert time.monotonic() < deadline, "the processors did not read the input in 120 s"
            time.sleep(0.1)
        argv = [sys.executable, "-m", "samza_nb.cli", "drain", "zkjob:app", "--wait", "--timeout", "120"]
        for key, value in _settings(zk_connect).items():
            argv += ["--set", f"{key}={value}"]
        drain = subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=180, check=False)
        assert drain.returncode == 0, drain.stderr.decode()[-2000:]
        # `drain --wait` returned once no processor was live: each is past its last epoch
        # and only has its process to end.
        for process in processes:
            output, _ = process.communicate(timeout=20)
            assert process.returncode == 0 and b"job drained" in output, output.decode()[-2000:]
        # Nothing runs now: a second drain is refused (its notification would stop the next run).
        again = subprocess.run([a for a in argv if a != "--wait"], cwd=tmp_path, capture_output=True, timeout=120, check=False)
        assert again.returncode == 1 and b"the job is not running" in again.stderr, again.stderr.decode()[-2000:]
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    assert _totals(system) == expected_counts(events)


def test_caught_up_waits_for_the_tasks_of_a_processor_that_died(zk_connect: str, tmp_path: Path) -> None:
    # An open input and --until caught-up: the survivor's own tasks catch up long before the
    # dead processor's session expires. "Finished" must wait for the new model and for the
    # dead one's partitions to be read too.
    log = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=log)
    events = generate_page_views(4_000, seed=23)
    write_page_views(system, events, end=False)
    (tmp_path / "zkjob.py").write_text(_MODULE.format(path=str(log)))
    survivor = _processor(tmp_path, zk_connect, "p1", "host-a", until="caught-up")
    doomed = _processor(tmp_path, zk_connect, "p2", "host-b", until="caught-up")
    try:
        deadline = time.monotonic() + 120
        while _committed(zk_connect) < 6:
            assert time.monotonic() < deadline, "the processors committed nothing in 120 s"
            time.sleep(0.1)
        os.killpg(doomed.pid, signal.SIGKILL)
        assert doomed.wait(30) == -signal.SIGKILL
        output, _ = survivor.communicate(timeout=240)
        assert survivor.returncode == 0 and b"job finished" in output, output.decode()[-3000:]
    finally:
        for process in (survivor, doomed):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    assert _input_read(zk_connect) == len(events), output.decode()[-2000:]


_STANDBY_MODULE = """
from samza_nb.examples.user_counts import build_app
from samza_nb.systems import EmbeddedSystem
app = build_app(EmbeddedSystem("embedded", path={path!r}), name="zk-standby")
"""


def _standby_job(tmp_path: Path, *, written: bool = True) -> tuple[EmbeddedSystem, list[dict[str, Any]]]:
    """3,000 events (written under ``tmp_path`` unless not ``written``: the input stream is then
    created empty) and the module ``zkjob`` counting them per user."""
    log = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=log)
    events = generate_events(3_000, users=1_000)
    write_events(system, events if written else [], end=written)
    (tmp_path / "zkjob.py").write_text(_STANDBY_MODULE.format(path=str(log)))
    return system, events


def test_a_killed_processor_process_fails_over_to_its_standbys(zk_connect: str, tmp_path: Path) -> None:
    # The events are written once the three processors have agreed on a model: one whose Spark
    # started late would join when the others' tasks had read their input, and only as standbys.
    system, events = _standby_job(tmp_path, written=False)
    standby = {"job.standbytasks.replication.factor": "2"}
    processes = {
        pid: _processor(tmp_path, zk_connect, pid, location, standby)
        for pid, location in (("p1", "host-a"), ("p2", "host-b"), ("p3", "host-c"))
    }
    doomed = processes.pop("p2")
    try:
        deadline = time.monotonic() + 180
        # Every task has committed three epochs since the model of all three processors was
        # agreed, so every processor has stepped the standbys it holds in that model (a step
        # follows each commit, and the first commit may be of the epoch in flight before). A
        # standby that never stepped restores in full (a CI run failed so, 2 restores of 552
        # records, when one processor had joined after the others had read 1,200 events).
        seqs_at_model: dict[str, int] | None = None
        watch = _JobWatch(zk_connect, "zk-standby")
        try:
            while True:
                assert time.monotonic() < deadline, (
                    "the processors read 1200 events, every task 3 epochs in the model of all three, in 180 s"
                )
                for process in (doomed, *processes.values()):
                    if process.poll() is not None:
                        said = process.stdout.read().decode()[-3000:] if process.stdout else ""
                        pytest.fail(f"a processor ended (exit {process.returncode}) before the kill:\n{said}")
                if seqs_at_model is None:
                    if watch.agreed_processors() == {"p1", "p2", "p3"}:
                        seqs_at_model = watch.seqs()
                        write_events(system, events)
                else:
                    seqs = watch.seqs()
                    since = [seq - seqs_at_model.get(task, 0) for task, seq in seqs.items()]
                    if len(since) >= 4 and min(since) >= 3 and watch.read("events#") >= 1_200:
                        break
                time.sleep(0.05)
        finally:
            watch.close()
        os.killpg(doomed.pid, signal.SIGKILL)
        assert doomed.wait(30) == -signal.SIGKILL
        outputs = {}
        for pid, process in processes.items():
            output, _ = process.communicate(timeout=240)
            outputs[pid] = output.decode()
            assert process.returncode == 0, outputs[pid][-3000:]
    finally:
        for process in (doomed, *processes.values()):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    assert totals_of(system.read_frame("user-counts")) == expected_totals(events)
    # The dead process's tasks were promoted onto their standbys, which apply the committed
    # epochs each time their own processor steps: a promoted task replays only the epochs its
    # standby had not reached yet. Under load that is a few (CI14: two, 80 records each), never
    # the whole state, which a move to a location without it replays: at least 300 records each.
    restored = [  # (store restores, records) per survivor
        (
            int(line.split(":")[1].split("(")[0]),
            int(line.split("(")[1].split(" records")[0].replace(",", "")),
        )
        for text in outputs.values()
        for line in text.splitlines()
        if line.startswith("store restores from changelogs:")
    ]
    assert len(restored) == 2, outputs
    assert all(records <= 3 * _EPOCH_MESSAGES * max(restores, 1) for restores, records in restored), (
        restored,
        outputs,
    )


def test_processes_of_a_standby_job_started_one_at_a_time_run_and_gain_their_standbys(
    zk_connect: str, tmp_path: Path
) -> None:
    # A deploy starts processes one after another: the first is alone past the debounce, with
    # one location for two copies of each task. It runs with the standbys one location allows
    # (none) instead of failing, and the second's arrival places them.
    system, events = _standby_job(tmp_path)
    standby = {"job.standbytasks.replication.factor": "2"}
    # Local executors: the second process must join while the first still has input to read
    # (a Spark start of 10-20 s here let the first finish alone).
    first = _processor(tmp_path, zk_connect, "p1", "host-a", standby, executor="local")
    second = None
    root = "/app-zk-standby-1/ApplicationRunnerData"
    try:
        deadline = time.monotonic() + 120
        while _input_read(zk_connect, root, "events#") < 300:
            assert first.poll() is None, first.stdout.read().decode()[-3000:] if first.stdout else ""
            assert time.monotonic() < deadline, "the first processor read 300 events alone in 120 s"
            time.sleep(0.1)
        second = _processor(tmp_path, zk_connect, "p2", "host-b", standby, executor="local")
        outputs = []
        for process in (first, second):
            output, _ = process.communicate(timeout=240)
            outputs.append(output.decode())
            assert process.returncode == 0, outputs[-1][-3000:]
        alone = next(line for line in outputs[0].splitlines() if line.startswith("processor p1 runs"))
        assert "Standby-" not in alone  # one location: no copy could go anywhere
        assert any("Standby-" in line for text in outputs for line in text.splitlines() if " runs " in line)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    assert totals_of(system.read_frame("user-counts")) == expected_totals(events)
