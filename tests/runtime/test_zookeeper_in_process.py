"""Jobs on ZooKeeper whose processors run in this process (local executor).

``reset`` is refused while a processor of the job is live; afterwards the job's records in
ZooKeeper are gone too, so the next run reads its inputs from the start (a job home alone would
adopt the old checkpoints and read nothing). Each processor reports every task's lag from the
checkpoints the processors share."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import ConfigError, JobLeaseError
from samza_nb.job import run
from samza_nb.job.reset import reset_job
from samza_nb.metadata.registry import get_metadata_store
from samza_nb.systems import EmbeddedSystem

pytestmark = pytest.mark.services


def _ended_input(tmp_path: Path, partitions: int, messages: int) -> EmbeddedSystem:
    """A log with the input ``in`` (ended) and the output ``out`` (2 partitions)."""
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("in", partitions)
    system.write("in", [{"i": i} for i in range(messages)])
    system.end_stream("in")
    system.create_stream("out", 2)
    return system


def _copy(system: EmbeddedSystem, name: str) -> StreamApplication:
    """``in`` copied to ``out``."""
    app = StreamApplication(name)
    app.input(system.input("in")).send_to(app.output(system.output("out")))
    return app


def _on_zookeeper(zk_connect: str, home: Path, pid: str, **extra: str) -> dict[str, str]:
    return {
        "job.coordinator.factory": "zookeeper",
        "job.coordinator.zk.connect": zk_connect,
        "job.coordinator.zk.session.timeout.ms": "4000",
        "job.debounce.time.ms": "300",
        "processor.id": pid,
        "job.home": str(home),
        **extra,
    }


def test_reset_refuses_a_live_processor_then_clears_the_jobs_records_in_zookeeper(
    tmp_path: Path, zk_connect: str
) -> None:
    system = _ended_input(tmp_path, partitions=2, messages=20)
    config = _on_zookeeper(zk_connect, tmp_path / "home", "p1")
    run(_copy(system, "reset-zk"), config, executor="local")
    assert len(system.read("out")) == 20

    job = run(_copy(system, "reset-zk"), config, executor="local", background=True, until="forever")
    try:
        deadline = time.monotonic() + 60
        while job.epoch < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(JobLeaseError, match=r"job 'reset-zk' \(id '1'\) is running: processors \['p1'\] are live"):
            reset_job(_copy(system, "reset-zk").plan(config))
    finally:
        job.stop()
    assert system.partition_count("out") == 2  # nothing was deleted

    plan = _copy(system, "reset-zk").plan(config)
    removed = reset_job(plan)
    assert any("records of the job in ZkMetadataStore" in line for line in removed)
    store = get_metadata_store("zookeeper", plan.config)
    try:
        assert store.all() == {}
    finally:
        store.close()
    run(_copy(system, "reset-zk"), config, executor="local")
    assert len(system.read("out")) == 40  # read from the start again


def test_each_processor_process_reports_the_lag_of_every_task_from_the_shared_checkpoints(
    tmp_path: Path, zk_connect: str
) -> None:
    # Two processors of one job (here two Jobs in one process, as two processes would be):
    # each reads half the tasks, and each one's status counts the other half's lag from what
    # the other committed in ZooKeeper, not as if nothing had been read there.
    system = _ended_input(tmp_path, partitions=4, messages=400)
    jobs = {
        pid: run(
            _copy(system, "lag-zk"),
            _on_zookeeper(zk_connect, tmp_path / pid, pid, **{"task.max.epoch.messages": "20"}),
            executor="local",
            background=True,
            until="forever",
        )
        for pid in ("p1", "p2")
    }
    try:
        deadline = time.monotonic() + 90
        while len(system.read("out")) < 400 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(system.read("out")) == 400
        hosted = {pid: set(job.job_model.containers[pid].tasks) for pid, job in jobs.items()}
        assert hosted["p1"] and hosted["p2"], hosted  # both hold tasks
        # The last outputs are appended before their epoch commits: wait for the commits.
        for job in jobs.values():
            lags = {task: info["lag"] for task, info in job.status().tasks.items()}
            while any(lags.values()) and time.monotonic() < deadline + 30:
                time.sleep(0.1)
                lags = {task: info["lag"] for task, info in job.status().tasks.items()}
            assert lags == dict.fromkeys(lags, 0), lags
        # p2 leaves: p1's model gets p2's tasks, which ended there and are never opened again;
        # their lag still comes from what p2 committed, not from offset 0.
        jobs["p2"].stop()
        survivor = jobs["p1"]
        while len(survivor.job_model.containers["p1"].tasks) < 4:
            assert time.monotonic() < deadline + 60, "p1 did not get p2's tasks"
            time.sleep(0.1)
        lags = {task: info["lag"] for task, info in survivor.status().tasks.items()}
        assert len(lags) == 4 and lags == dict.fromkeys(lags, 0), lags
    finally:
        for job in jobs.values():
            job.stop()


def test_a_processor_process_of_a_distributed_job_refuses_processors_n(tmp_path: Path, zk_connect: str) -> None:
    system = _ended_input(tmp_path, partitions=1, messages=0)
    config = _on_zookeeper(zk_connect, tmp_path / "home", "p1")
    with pytest.raises(ConfigError, match=r"processors=2: a process of a job on zookeeper hosts one processor"):
        run(_copy(system, "many-zk"), config, processors=2, executor="local")


def test_an_idle_processor_reads_only_the_namespaces_it_polls_and_not_at_every_idle_wait(
    tmp_path: Path, zk_connect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An idle processor of a distributed job looks for tasks the others ended (once a second)
    and for drain notifications (once a poll interval): it reads those namespaces only. It used
    to read every checkpoint, epoch plan and assignment of the job at each idle wait (up to five
    a second): about 360 ZooKeeper requests a second for this job of four tasks."""
    from samza_nb.metadata.zk_client import ZkClient

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("in", 4)
    system.write("in", [{"i": i} for i in range(400)])  # not ended: the job waits for more
    system.create_stream("out", 2)
    config = _on_zookeeper(zk_connect, tmp_path / "home", "p1")
    job = run(_copy(system, "idle-zk"), config, executor="local", background=True, until="forever")
    try:
        deadline = time.monotonic() + 60
        while len(system.read("out")) < 400 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(system.read("out")) == 400
        time.sleep(1.0)  # the last epochs commit; then the processor only waits
        calls: list[str] = []
        call = ZkClient.call
        monkeypatch.setattr(ZkClient, "call", lambda client, what, *rest: calls.append(what) or call(client, what, *rest))
        time.sleep(3.0)
        idle = list(calls)  # job.status() below reads the checkpoints: not the processor's
        assert job.status().state == "running"
    finally:
        job.stop()
    # About 3 listings in 3 s for ended tasks and 3 for drain notifications: 6 here, 18 when
    # every idle wait (up to five a second) listed the ended tasks; reading every value of the
    # job's namespaces as well made it over a thousand.
    values_read = [what for what in idle if what.startswith("get ")]
    assert values_read == [], values_read  # no task ended, no drain asked: nothing to read
    assert len(idle) <= 12, idle


def test_an_ended_job_gives_up_its_zookeeper_session_and_still_answers(tmp_path: Path, zk_connect: str) -> None:
    """Each ended job of a kernel kept a ZooKeeper session (and connection) open for the
    kernel's life: ZooKeeper refuses a client more than ``maxClientCnxns`` (60) connections.
    The session ends with the run; what the handle shows afterwards opens one on demand."""
    system = _ended_input(tmp_path, partitions=2, messages=40)
    config = _on_zookeeper(zk_connect, tmp_path / "home", "p1")
    job = run(_copy(system, "ended-zk"), config, executor="local", until="end-of-stream")
    session = job.metadata._session  # type: ignore[attr-defined]
    assert session._released  # when the last processor stopped; run() read the status since
    session.idle_s = 0.5
    assert job.status().state == "finished"
    assert len(system.read("out")) == 40
    deadline = time.monotonic() + 10
    while session._client is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session._client is None  # ended once the reads went quiet
    assert job.status().state == "finished"  # read on a session opened for it
    assert session._client is not None
