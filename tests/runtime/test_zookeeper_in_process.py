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
from samza_nb.errors import JobLeaseError
from samza_nb.metadata.registry import get_metadata_store
from samza_nb.runtime import run
from samza_nb.runtime.reset import reset_job
from samza_nb.systems import EmbeddedSystem

pytestmark = pytest.mark.services


def test_reset_refuses_a_live_processor_then_clears_the_jobs_records_in_zookeeper(
    tmp_path: Path, zk_connect: str
) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("in", 2)
    system.write("in", [{"i": i} for i in range(20)])
    system.end_stream("in")
    config = {
        "job.coordinator.factory": "zookeeper",
        "job.coordinator.zk.connect": zk_connect,
        "job.coordinator.zk.session.timeout.ms": "4000",
        "job.debounce.time.ms": "200",
        "processor.id": "p1",
        "job.home": str(tmp_path / "home"),
    }

    def app() -> StreamApplication:
        app = StreamApplication("reset-zk")
        app.input(system.input("in")).send_to(app.output(system.output("out", partitions=2)))
        return app

    run(app(), config, executor="local")
    assert len(system.read("out")) == 20

    job = run(app(), config, executor="local", background=True, until="forever")
    try:
        deadline = time.monotonic() + 60
        while job.epoch < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(JobLeaseError, match=r"job 'reset-zk' \(id '1'\) is running: processors \['p1'\] are live"):
            reset_job(app().plan(config))
    finally:
        job.stop()
    assert system.partition_count("out") == 2  # nothing was deleted

    removed = reset_job(app().plan(config))
    assert any("records of the job in ZkMetadataStore" in line for line in removed)
    store = get_metadata_store("zookeeper", app().plan(config).config)
    try:
        assert store.all() == {}
    finally:
        store.close()
    run(app(), config, executor="local")
    assert len(system.read("out")) == 40  # read from the start again


def test_each_processor_process_reports_the_lag_of_every_task_from_the_shared_checkpoints(
    tmp_path: Path, zk_connect: str
) -> None:
    # Two processors of one job (here two Jobs in one process, as two processes would be):
    # each reads half the tasks, and each one's status counts the other half's lag from what
    # the other committed in ZooKeeper, not as if nothing had been read there.
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("in", 4)
    system.write("in", [{"i": i} for i in range(400)])
    system.end_stream("in")
    system.create_stream("out", 2)  # the leader creates it too, once its first model is out

    def app() -> StreamApplication:
        app = StreamApplication("lag-zk")
        app.input(system.input("in")).send_to(app.output(system.output("out", partitions=2)))
        return app

    def config(pid: str) -> dict[str, str]:
        return {
            "job.coordinator.factory": "zookeeper",
            "job.coordinator.zk.connect": zk_connect,
            "job.coordinator.zk.session.timeout.ms": "4000",
            "job.debounce.time.ms": "300",
            "processor.id": pid,
            "job.home": str(tmp_path / pid),
            "task.max.epoch.messages": "20",
        }

    first = run(app(), config("p1"), executor="local", background=True, until="forever")
    second = run(app(), config("p2"), executor="local", background=True, until="forever")
    try:
        deadline = time.monotonic() + 90
        while len(system.read("out")) < 400 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(system.read("out")) == 400
        hosted = {pid: set(job.job_model.containers[pid].tasks) for pid, job in (("p1", first), ("p2", second))}
        assert hosted["p1"] and hosted["p2"], hosted  # both hold tasks
        for job in (first, second):
            lags = {task: info["lag"] for task, info in job.status().tasks.items()}
            assert lags == dict.fromkeys(lags, 0), lags
    finally:
        first.stop()
        second.stop()


def test_a_processor_process_of_a_distributed_job_refuses_processors_n(tmp_path: Path, zk_connect: str) -> None:
    from samza_nb.errors import ConfigError

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("in", 1)
    app = StreamApplication("many-zk")
    app.input(system.input("in")).send_to(app.output(system.output("out", partitions=1)))
    config = {"job.coordinator.factory": "zookeeper", "job.coordinator.zk.connect": zk_connect,
              "job.home": str(tmp_path / "home")}
    with pytest.raises(ConfigError, match=r"processors=2: a process of a job on zookeeper hosts one processor"):
        run(app, config, processors=2, executor="local")
