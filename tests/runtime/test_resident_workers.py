"""Resident workers: Spark Python workers held by one long-running Spark job take the task
epochs (runtime/executors/resident_workers.py). Same outputs as one Spark job per epoch; the cores go
back to any other Spark job of the session; an epoch whose worker dies runs again on new
workers (nothing committed twice), and after its retries fails the job with the task named."""

from __future__ import annotations

import os
import signal
import stat
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.errors import JobError, WorkerLostError
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import run
from samza_nb.runtime.executors.resident_workers import ResidentWorkers, ResidentWorkersClosed
from samza_nb.runtime.executors.worker_link import WorkerLink, process_alive
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock

pytestmark = pytest.mark.spark


def _wait_for(condition: Any, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _group_jobs_active(spark: Any, group: str) -> bool:
    tracker = spark.sparkContext.statusTracker()
    return bool(set(tracker.getJobIdsForGroup(group)) & set(tracker.getActiveJobsIds()))


def test_resident_workers_give_the_same_outputs_as_a_spark_job_per_epoch(spark: Any, tmp_path: Path) -> None:
    events = generate_page_views(3_000, seed=5)
    used = {}
    for resident in ("true", "false"):
        system = EmbeddedSystem("embedded", path=tmp_path / resident)
        write_page_views(system, events)
        config = {"task.max.epoch.messages": "400", "job.spark.resident.workers": resident}
        job = run(build_app(system), config, clock=StepClock(), executor="spark")
        assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
        used[resident] = (job._executor.resident_jobs, job._executor.epochs_on_spark)
    assert used["true"][0] >= 1 and used["true"][1] > 2
    assert used["false"] == (0, used["false"][1]) and used["false"][1] > 2


def test_a_job_gives_its_workers_back_when_it_ends(spark: Any, tmp_path: Path) -> None:
    events = generate_page_views(500, seed=6)
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    write_page_views(system, events)
    config = {"task.max.epoch.messages": "200", "job.container.count": "2"}
    job = run(build_app(system), config, clock=StepClock(), executor="spark")
    # Two processors of one job took their epochs' task epochs on its one pool.
    assert job.collect("page-counts")["value"].sum() == sum(expected_counts(events).values())
    assert job._executor.resident_jobs == 1
    pool = job._executor._pool
    assert pool is None  # handed back when the job ended
    assert _wait_for(lambda: not spark.sparkContext.statusTracker().getActiveJobsIds())


def test_jobs_side_by_side_take_turns_on_the_workers(spark: Any, tmp_path: Path) -> None:
    events = generate_page_views(2_000, seed=7)
    outcomes: dict[str, Any] = {}

    def one(name: str) -> None:
        system = EmbeddedSystem("embedded", path=tmp_path / name)
        write_page_views(system, events)
        try:
            job = run(build_app(system), {"task.max.epoch.messages": "150"}, clock=StepClock(), executor="spark")
            outcomes[name] = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
        except BaseException as error:
            outcomes[name] = error

    threads = [threading.Thread(target=one, args=(name,)) for name in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert outcomes == {"left": expected_counts(events), "right": expected_counts(events)}


def test_another_spark_job_gets_the_cores_while_a_running_job_is_idle(spark: Any, tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = generate_page_views(300, seed=8)
    write_page_views(system, events, end=False)
    job = run(build_app(system), {}, clock=StepClock(), executor="spark", until="forever", background=True)
    try:
        assert _wait_for(lambda: job.metrics()["streams"]["page-views"]["in"] == len(events))
        pool = job._executor._pool  # idle now, kept for 60 s
        assert pool is not None and not pool.closed
        assert _wait_for(lambda: _group_jobs_active(spark, pool.group))
        counted: list[int] = []
        query = threading.Thread(target=lambda: counted.append(spark.sparkContext.parallelize(range(100), 2).count()))
        query.start()
        query.join(timeout=30)  # it would wait the pool's 60 s if the pool kept the cores
        assert counted == [100]
        assert pool.closed
        assert _wait_for(lambda: not _group_jobs_active(spark, pool.group))
        # New input: the next epoch takes a new pool.
        write_page_views(system, generate_page_views(40, seed=9), end=False)
        assert _wait_for(lambda: job.metrics()["streams"]["page-views"]["in"] == len(events) + 40)
        assert job._executor.resident_jobs == 2
    finally:
        job.stop()


def test_a_quiet_pool_looks_for_other_spark_jobs_four_times_a_second(spark: Any) -> None:
    """Each look is a py4j round trip: twenty a second while epochs come, four once none came
    for a second (another job then waits up to a quarter of a second for the cores)."""
    context = spark.sparkContext
    pool = ResidentWorkers(context, context.parallelize(range(2), 2), idle_s=60)
    try:
        time.sleep(1.5)  # no epoch came for a second
        looks: list[float] = []
        active = pool._other_jobs.active
        pool._other_jobs.active = lambda: looks.append(time.monotonic()) or active()  # type: ignore[method-assign]
        time.sleep(2.0)
        assert 1 <= len(looks) <= 10, looks  # 40 at the busy pace
    finally:
        pool.close()


def test_an_idle_pool_ends_its_spark_job(spark: Any) -> None:
    context = spark.sparkContext
    # Idle for 1.5 s from its start: time enough to see its Spark job run on a loaded machine
    # (with 0.3 s the pool was once closed, its folder gone, before the test looked).
    pool = ResidentWorkers(context, context.parallelize(range(2), 2), idle_s=1.5)
    try:
        assert stat.S_IMODE(os.stat(Path(pool._address).parent).st_mode) == 0o700  # only this user
        assert _wait_for(lambda: _group_jobs_active(spark, pool.group))
        assert _wait_for(lambda: pool.closed)
        assert _wait_for(lambda: not _group_jobs_active(spark, pool.group))
        assert not Path(pool._address).parent.exists()
        with pytest.raises(ResidentWorkersClosed):
            pool.run("digest", b"", [])
    finally:
        pool.close()


def test_an_engine_failure_in_a_worker_names_the_task_and_keeps_its_traceback(spark: Any, tmp_path: Path) -> None:
    from samza_nb.runtime.epoch import EpochAssignment

    context = spark.sparkContext
    pool = ResidentWorkers(context, context.parallelize(range(1), 1), idle_s=60)
    assignment = EpochAssignment(
        "Partition 3", "p", 7, 0, "run", "here", str(tmp_path), 0, [], {}, {}, {}, {}
    )  # fmt: skip
    try:
        with pytest.raises(JobError) as raised:
            pool.run("not-a-plan", b"not a pickled plan", [assignment])
        message = str(raised.value)
        assert "task Partition 3 (checkpoint seq 7) raised in its Spark Python worker" in message
        assert "Traceback" in message and "pickle" in message.lower()
        assert pool.closed  # a pool that failed is not used again
    finally:
        pool.close()


def _kill_worker_times(markers: Path, times: int) -> Any:
    """A pass-through user function that SIGKILLs the Python worker running it, at the first
    message it sees while fewer than ``times`` workers were killed (one marker file each,
    holding the killed pid)."""

    def passed(value: Any) -> Any:
        if len(os.listdir(markers)) < times:
            # Two workers may get here at once: each kill takes a slot, made exclusively.
            for slot in range(times):
                try:
                    os.close(os.open(markers.parent / f"kill-slot-{slot}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    continue
                (markers / str(os.getpid())).write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)  # the Python worker running this task epoch
        return value

    return passed


def _killing_app(system: EmbeddedSystem, markers: Path, times: int, *, where: str) -> Any:
    """The quickstart, its workers killed ``times`` times: at the first input message
    (``where="input"``) or at the first pane after the shuffle (``where="pane"``: earlier
    epochs already appended shuffled messages and filled the window's store)."""
    from samza_nb.api import KV, StreamApplication, Windows

    kill = _kill_worker_times(markers, times)
    application = StreamApplication("killed-worker", job_id="1")
    views = application.input(system.input("page-views", partitions=4, serde="json"))
    counts = application.output(system.output("page-counts", partitions=4, serde="json"))
    (
        views.map(kill if where == "input" else (lambda view: view))
        .filter(lambda view: view["country"] == "US")
        .partition_by(lambda view: view["page"], op_id="by-page")
        .window(
            Windows.keyed_tumbling(
                lambda kv: kv.key, timedelta(seconds=10), initial=lambda: 0, fold=lambda kv, n: n + 1
            ),
            op_id="count",
        )
        .map(lambda pane: kill(KV(pane.key.key, pane.message)) if where == "pane" else KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    return application


def _input_and_markers(tmp_path: Path) -> tuple[list[dict[str, Any]], EmbeddedSystem, Path]:
    """2,000 page views written and ended, and an empty folder for the kill markers."""
    events = generate_page_views(2_000, seed=9)
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    write_page_views(system, events)
    markers = tmp_path / "killed"
    markers.mkdir()
    return events, system, markers


@pytest.mark.parametrize("where", ["input", "pane"])
def test_an_epoch_whose_worker_is_killed_runs_again_and_counts_every_message_once(
    spark: Any, tmp_path: Path, where: str
) -> None:
    events, system, markers = _input_and_markers(tmp_path)
    config = {"task.max.epoch.messages": "300", "job.home": str(tmp_path / "home")}
    job = run(_killing_app(system, markers, 1, where=where), config, clock=StepClock(), executor="spark")
    [killed] = [path.name for path in markers.iterdir()]
    assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
    lost = job.metrics()["workers_lost"]
    assert lost["count"] == 1
    assert f"(pid {killed})" in lost["last"] and "ended before it returned" in lost["last"]
    assert "nothing of the epoch was committed" in lost["last"]
    assert job._executor.resident_jobs >= 2  # the killed worker's pool closed; a new one ran on


#: A Spark job per epoch (resident workers off), never an epoch in the test's own process (the
#: kill would end pytest).
_SPARK_JOB_PER_EPOCH = {"job.spark.resident.workers": "false", "job.spark.driver.epoch.max.messages": "0"}


@pytest.mark.parametrize("where", ["input", "pane"])
def test_with_a_spark_job_per_epoch_a_killed_worker_s_epoch_runs_again_and_counts_every_message_once(
    spark: Any, tmp_path: Path, where: str
) -> None:
    events, system, markers = _input_and_markers(tmp_path)
    config = {"task.max.epoch.messages": "300", "job.home": str(tmp_path / "home"), **_SPARK_JOB_PER_EPOCH}
    job = run(_killing_app(system, markers, 1, where=where), config, clock=StepClock(), executor="spark")
    assert len(list(markers.iterdir())) == 1
    assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
    lost = job.metrics()["workers_lost"]
    assert lost["count"] == 1
    assert "Python worker exited unexpectedly (crashed)" in lost["last"]
    assert "nothing of the epoch was committed" in lost["last"]
    assert job._executor.resident_jobs == 0


@pytest.mark.parametrize("resident", [True, False])
def test_a_worker_killed_on_every_try_fails_the_job_after_the_retries_and_the_rerun_counts_everything_once(
    spark: Any, tmp_path: Path, resident: bool
) -> None:
    events, system, markers = _input_and_markers(tmp_path)
    config = {
        "task.max.epoch.messages": "300",
        "job.home": str(tmp_path / "home"),
        "job.spark.epoch.retries": "1",
        "job.spark.partitions": "1",  # one worker per pool or Spark job: one kill per try
        **({} if resident else _SPARK_JOB_PER_EPOCH),
    }
    with pytest.raises(WorkerLostError) as raised:
        run(_killing_app(system, markers, 2, where="input"), config, clock=StepClock(), executor="spark")
    killed = sorted(path.name for path in markers.iterdir())
    assert len(killed) == 2
    message = str(raised.value)
    assert "ended before it returned" in message and "(the epoch ran 2 times)" in message
    if resident:  # the pool knows its workers' pids
        assert any(f"(pid {pid})" in message for pid in killed)
    assert "Python worker exited unexpectedly (crashed)" in message  # Spark's reason, in one line
    assert "nothing of the epoch was committed" in message and "\n" not in message
    job = run(_killing_app(system, markers, 2, where="input"), config, clock=StepClock(), executor="spark")
    assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
    assert job.metrics()["workers_lost"] == {"count": 0, "last": None}


def _locked(path: str) -> bool:
    from rocksdict import Options, Rdict

    try:
        Rdict(path, Options(raw_mode=True)).close()
    except Exception as error:
        if "lock" in str(error).lower():
            return True
        raise
    return False


def test_workers_keep_their_tasks_stores_open_from_epoch_to_epoch(spark: Any, tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = generate_page_views(600, seed=12)
    write_page_views(system, events, end=False)
    config = {"job.home": str(tmp_path / "home"), "task.max.epoch.messages": "100"}
    more = generate_page_views(300, seed=13)
    job = run(build_app(system), config, clock=StepClock(), executor="spark", background=True)
    try:
        assert _wait_for(lambda: job.metrics()["streams"]["page-views"]["in"] == len(events))
        pool = job._executor._pool
        assert pool is not None and not pool.closed
        # Each task's window store, kept by the worker that ran it. The driver hears of a keep
        # with the epoch's result and of a release one epoch late: under load (CI54) it saw 3
        # keepers at the moment the input was read, so the check looks again until it sees 4.
        assert _wait_for(lambda: len(pool._homes.keepers()) == 4), pool._homes.keepers()
        homes = pool._homes.keepers()

        # Open in the workers. The driver learns of a store a worker released to spread the
        # tasks one epoch after the worker let go of it: on a loaded machine the two disagree
        # for an epoch, so the check looks again until they agree.
        def kept_stores_are_open() -> bool:
            folders = pool._homes.keepers()
            stores = [str(store) for folder in folders for store in Path(folder).iterdir()]
            return len(folders) == 4 and bool(stores) and all(_locked(store) for store in stores)

        assert _wait_for(kept_stores_are_open), pool._homes.keepers()
        stores = [str(store) for folder in homes for store in Path(folder).iterdir()]
        # Every worker of the pool connected first (a loaded machine starts the second one
        # late): the epochs of the input below spread the stores over all of them.
        assert _wait_for(lambda: pool._connected == pool._slots)
        # More input: the next epochs go to the workers keeping the stores, and count on.
        write_page_views(system, more, end=False)
        assert _wait_for(lambda: job.metrics()["streams"]["page-views"]["in"] == len(events) + len(more))
        assert job._executor.resident_jobs == 1
        # A store released to spread the tasks is kept again once its task's next epoch ran
        # (the shuffled messages of the last input epoch are read one epoch later).
        assert _wait_for(lambda: set(pool._homes.keepers()) == set(homes)), pool._homes.keepers()
        # Spread over the workers: a worker that took more than its share (say, the first to
        # connect) released the excess when an epoch started. A free worker with its share
        # takes a released task rather than wait for a busy one (runtime/executors/task_homes.py), so on
        # a loaded machine the spread may take a few more epochs: more input, a round at most.
        def spread() -> Counter[int]:
            return Counter(worker.pid for worker in pool._homes.keepers().values())

        for extra in range(5):
            kept_by = spread()
            if len(kept_by) == pool._connected and max(kept_by.values()) <= -(-4 // pool._connected):
                break
            later = generate_page_views(100, seed=20 + extra)
            write_page_views(system, later, end=False)
            more += later
            total = len(events) + len(more)
            assert _wait_for(lambda total=total: job.metrics()["streams"]["page-views"]["in"] == total)
            assert _wait_for(lambda: set(pool._homes.keepers()) == set(homes)), pool._homes.keepers()
        kept_by = spread()
        assert len(kept_by) == pool._connected and max(kept_by.values()) <= -(-4 // pool._connected)
        system.end_stream("page-views")
        job.wait(timeout=60)
    finally:
        job.stop()
    # The panes fired at the end of the stream, from the stores kept open all along.
    counted = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert counted == expected_counts(events + more)
    # The job ended: its workers returned and closed the stores.
    assert _wait_for(lambda: not any(_locked(store) for store in stores), seconds=10)


def test_a_worker_keeping_more_than_its_share_releases_the_excess(spark: Any) -> None:
    from multiprocessing import Pipe


    context = spark.sparkContext
    pool = ResidentWorkers(context, context.parallelize(range(1), 1), idle_s=60)
    driver_end, worker_end = Pipe()
    asked: list[Any] = []

    def answer() -> None:
        message = worker_end.recv()
        asked.append(message)
        worker_end.send(("released", len(message[1])))

    answering = threading.Thread(target=answer, daemon=True)
    answering.start()
    try:
        assert _wait_for(lambda: pool._connected == 1)  # the pool's own worker
        keeper = WorkerLink(driver_end, 9, os.getpid())
        folders = [f"/stores/here/Partition {task}" for task in range(4)]
        with pool._cond:
            pool._connected += 1
            pool._free.append(keeper)
            for folder in folders:
                pool._homes.noted(folder, keeper, keeps=True)
        pool._spread(folders)  # 4 tasks, 2 workers: a share of 2
        answering.join(timeout=10)
        assert asked == [("release", folders[2:])]
        assert {folder: worker.slot for folder, worker in pool._homes.keepers().items()} == dict.fromkeys(folders[:2], 9)
        assert keeper in pool._free
        pool._spread(folders)  # within its share now: nothing asked
        assert len(asked) == 1
    finally:
        with pool._cond:
            if keeper in pool._free:
                pool._free.remove(keeper)
        pool.close()


def test_released_tasks_are_closed_by_free_workers_now_and_by_busy_ones_when_they_finish(spark: Any) -> None:
    from multiprocessing import Pipe


    context = spark.sparkContext
    pool = ResidentWorkers(context, context.parallelize(range(1), 1), idle_s=60)
    free_end, free_worker_end = Pipe()
    busy_end, busy_worker_end = Pipe()
    asked: dict[str, list[Any]] = {"free": [], "busy": []}

    def answer(name: str, end: Any) -> None:
        message = end.recv()
        asked[name].append(message)
        end.send(("released", len(message[1])))

    for name, end in (("free", free_worker_end), ("busy", busy_worker_end)):
        threading.Thread(target=answer, args=(name, end), daemon=True).start()
    free, busy = WorkerLink(free_end, 8, os.getpid()), WorkerLink(busy_end, 9, os.getpid())
    try:
        with pool._cond:
            pool._free.append(free)
            for task, keeper in ((0, free), (1, free), (2, busy), (3, busy)):
                pool._homes.noted(f"/stores/here/Partition {task}", keeper, keeps=True)
        pool.release(["/stores/here/Partition 1", "/stores/here/Partition 2"])
        assert asked["free"] == [("release", ["/stores/here/Partition 1"])]
        assert asked["busy"] == []  # running task epochs: asked when it finishes
        assert set(pool._homes.keepers()) == {"/stores/here/Partition 0", "/stores/here/Partition 3"}
        pool._give_back(busy)  # its task epochs done
        assert asked["busy"] == [("release", ["/stores/here/Partition 2"])]
        assert busy in pool._free and free in pool._free
    finally:
        with pool._cond:
            pool._free[:] = [worker for worker in pool._free if worker not in (free, busy)]
        pool.close()


def test_a_worker_killed_between_epochs_with_stores_open_loses_nothing(spark: Any, tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events, more = generate_page_views(800, seed=14), generate_page_views(400, seed=15)
    write_page_views(system, events, end=False)
    # Epochs start a second apart: the workers are idle for most of it.
    config = {
        "job.home": str(tmp_path / "home"), "task.max.epoch.messages": "100",
        "task.epoch.min.interval.ms": "1000",
    }  # fmt: skip
    job = run(build_app(system), config, clock=StepClock(), executor="spark", background=True)
    try:
        assert _wait_for(lambda: job.metrics()["streams"]["page-views"]["in"] > 0)
        pool = job._executor._pool
        assert pool is not None

        def every_worker_keeps_stores_and_an_epoch_just_ended() -> bool:
            ended = pool._last_used
            if not _wait_for(lambda: pool._last_used != ended and pool._running == 0, seconds=5):
                return False
            kept_by = {worker.pid for worker in pool._homes.keepers().values()}
            return len(kept_by) == pool._connected

        assert _wait_for(every_worker_keeps_stores_and_an_epoch_just_ended)
        keepers = {worker.pid for worker in pool._homes.keepers().values()}
        for victim in keepers:  # idle, holding their tasks' stores (the last writes in the WAL)
            os.kill(victim, signal.SIGKILL)
        assert _wait_for(lambda: not any(map(process_alive, keepers)), seconds=10)
        # The next epoch finds its workers gone before handing anything out: it runs on a new
        # pool, whose workers open the stores RocksDB recovers from their WAL. (A worker lost
        # once another has task epochs of the epoch fails the job, as a killed busy one does.)
        write_page_views(system, more)
        assert job.wait(timeout=60) is not None
    finally:
        job.stop()
    assert job._executor.resident_jobs >= 2
    counted = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert counted == expected_counts(events + more)


def test_a_closed_executor_starts_no_new_pool(spark: Any) -> None:
    # A leaving processor's last epoch may come after the job released its executor: a new
    # pool then would outlive the job, holding cores and store locks.
    from samza_nb.config import Config
    from samza_nb.runtime.executors.executor import SparkExecutor

    executor = SparkExecutor(Config(), spark)
    executor.close()
    assert executor._resident_workers(spark.sparkContext) is None
    assert executor.resident_jobs == 0


def test_on_a_running_session_the_workers_start_before_the_lease_and_a_refused_run_gives_them_back(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from samza_nb.coordination.embedded_lease import EmbeddedJobLease
    from samza_nb.errors import JobLeaseError
    from samza_nb.runtime.executors.executor import SparkExecutor

    order: list[str] = []
    executors: list[SparkExecutor] = []
    start, acquire = SparkExecutor.start, EmbeddedJobLease.acquire

    def start_pool(self: SparkExecutor) -> None:
        if self not in executors:
            order.append("workers")
            executors.append(self)
        start(self)

    def take_lease(self: EmbeddedJobLease, *args: Any, **kwargs: Any) -> Any:
        order.append("lease")
        return acquire(self, *args, **kwargs)

    monkeypatch.setattr(SparkExecutor, "start", start_pool)
    monkeypatch.setattr(EmbeddedJobLease, "acquire", take_lease)
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    write_page_views(system, generate_page_views(300, seed=9), end=False)
    app = build_app(system, name="early")
    config = {"task.max.epoch.messages": "100"}
    first = run(app, config, until="forever", background=True, clock=StepClock())
    try:
        assert order == ["workers", "lease"]  # its workers connect while it sets up
        with pytest.raises(JobLeaseError):
            run(app, config, clock=StepClock())
        assert order == ["workers", "lease", "workers", "lease"]
        refused = executors[1]
        # The refused run's workers go back (or never start): only the first job's pool runs.
        assert _wait_for(lambda: refused._pool is None or refused._pool.closed)
        tracker = spark.sparkContext.statusTracker()

        def only_the_running_job_s_pool() -> bool:
            pool = executors[0]._pool  # the running job's (a new one after it gave its cores back)
            mine = set(tracker.getJobIdsForGroup(pool.group)) if pool is not None else set()
            return set(tracker.getActiveJobsIds()) <= mine

        assert _wait_for(only_the_running_job_s_pool)
    finally:
        first.stop()
    assert sum(first.metrics()["operators"].values()) >= 300  # it read every view meanwhile
