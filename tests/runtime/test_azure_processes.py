"""Standalone on Azure: processor processes (``samza-nb run`` with
``job.coordinator.factory=azure``) elect a leader by blob lease, agree on job models through the
page blob and share the work; when the follower is SIGKILLed the leader drops it once its
heartbeats are older than the freshness window, its tasks move to the leader, and the outputs
still equal the plain-Python counts. The account key never appears in any output. Each
processor runs its task epochs on Spark, the product path (``--executor spark``).

The leader's SIGKILL costs a whole lease (≥ 15 s on Azurite): notebooks/07-azure.ipynb, run
under papermill by the suite, kills the leader of three processes and asserts the bound (lease
duration + one liveness check) and the counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from samza_nb.config import Config
from samza_nb.coordination.azure import AzureJobObserver, AzureNames, ProcessorTable
from samza_nb.examples.page_views import expected_counts, generate_page_views, write_page_views
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import AzureAccount
from samza_nb.runtime.checkpoints import CheckpointStore
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import AZURE_PROCESS_TIMINGS, delete_azure_job, unique_name

pytestmark = [pytest.mark.services, pytest.mark.slow]

_MODULE = """
from samza_nb.examples.page_views import build_app
from samza_nb.systems import EmbeddedSystem
app = build_app(EmbeddedSystem("embedded", path={path!r}), name={name!r})
"""

TIMINGS = AZURE_PROCESS_TIMINGS


@pytest.fixture
def job(azure_connection_string: str) -> Iterator[Config]:
    """The config naming this test's job; its containers and table are deleted afterwards."""
    name = unique_name("az-pages")
    config = Config({"app.name": name, "azure.storage.connect": azure_connection_string})
    yield config
    delete_azure_job(name, azure_connection_string)


def _processor(
    tmp_path: Path,
    connect: str,
    pid: str,
    location: str,
    *,
    key_in_env: bool,
    app: str = "azjob:app",
    output: Path | None = None,
) -> subprocess.Popen[bytes]:
    """``samza-nb run`` of one processor; its output in a pipe, or in ``output`` (a file
    nobody reads while the test waits cannot block the process)."""
    settings = {
        "job.coordinator.factory": "azure",
        "processor.id": pid,
        "processor.locations": location,
        "task.max.epoch.messages": "40",
        "task.epoch.min.interval.ms": "200",
        **TIMINGS,
    }
    env = dict(os.environ)
    if key_in_env:
        env["SAMZA_NB_AZURE_CONNECTION_STRING"] = connect
    else:
        env.pop("SAMZA_NB_AZURE_CONNECTION_STRING", None)
        settings["azure.storage.connect"] = connect
    argv = [sys.executable, "-m", "samza_nb.cli", "run", app, "--executor", "spark"]
    for key, value in settings.items():
        argv += ["--set", f"{key}={value}"]
    sink = None if output is None else output.open("wb")
    try:
        return subprocess.Popen(
            argv,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE if sink is None else sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if sink is not None:
            sink.close()  # the process holds its own copy


def _job_module_over(
    job: Config, tmp_path: Path, events: list[dict[str, Any]], *, end: bool = True
) -> EmbeddedSystem:
    """``events`` written to an embedded log under ``tmp_path`` (ended there unless ``end`` is
    False), and the module ``azjob`` whose ``app`` is the quickstart over it (what the
    processor processes run)."""
    log = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=log)
    write_page_views(system, events, end=end)
    (tmp_path / "azjob.py").write_text(_MODULE.format(path=str(log), name=job.get_str("app.name")))
    return system


def _committed(store: AzureBlobMetadataStore) -> int:
    return sum(cp.seq for cp in CheckpointStore(store).read_all().values())


def _leader(table: ProcessorTable, freshness: float) -> str | None:
    leaders = {row.processor_id for row in table.live(freshness) if row.is_leader}
    return leaders.pop() if len(leaders) == 1 else None


def test_a_killed_follower_is_dropped_and_the_leader_finishes_with_exact_counts(
    job: Config, tmp_path: Path
) -> None:
    connect = job.get_str("azure.storage.connect")
    events = generate_page_views(4_000, seed=17)
    system = _job_module_over(job, tmp_path, events)
    processes = {
        # One takes the account from --set, the other from the environment.
        "p1": _processor(tmp_path, connect, "p1", "host-a", key_in_env=False),
        "p2": _processor(tmp_path, connect, "p2", "host-b", key_in_env=True),
    }
    store = AzureBlobMetadataStore.for_job(job)
    account = AzureAccount.from_config(job)
    tables = account.table_service()
    table = ProcessorTable(tables.get_table_client(AzureNames.for_job(job).table))
    table.ensure()
    outputs: dict[str, bytes] = {}
    try:
        deadline = time.monotonic() + 120
        leader = None
        while leader is None or _committed(store) < 20:
            assert time.monotonic() < deadline, "the processors committed nothing in 120 s"
            for pid, process in processes.items():
                if process.poll() is not None:
                    said = process.stdout.read().decode()[-3000:] if process.stdout else ""
                    pytest.fail(f"{pid} ended (exit {process.returncode}) before the kill:\n{said}")
            leader = _leader(table, 8.0)
            time.sleep(0.2)
        doomed = next(pid for pid in processes if pid != leader)
        os.killpg(processes[doomed].pid, signal.SIGKILL)
        assert processes[doomed].wait(30) == -signal.SIGKILL
        outputs[doomed] = processes[doomed].stdout.read() if processes[doomed].stdout else b""
        survivor_id = leader
        output, _ = processes[survivor_id].communicate(timeout=240)
        outputs[survivor_id] = output
        assert processes[survivor_id].returncode == 0, output.decode()[-3000:]
        assert b"job finished" in output
    finally:
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
        tables.close()
        store.close()
    observer = AzureJobObserver(job)
    try:
        # The last model the leader published is for itself alone: the follower was dropped.
        last = observer.observe()
        assert last.published == (survivor_id,) and set(last.model.containers) == {survivor_id}
    finally:
        observer.close()
    got, want = (
        system.read_frame("page-counts").groupby("key")["value"].sum().to_dict(),
        expected_counts(events),
    )
    lost = {k: want[k] - got.get(k, 0) for k in want if got.get(k, 0) < want[k]}
    doubled = {k: got[k] - want.get(k, 0) for k in got if got[k] > want.get(k, 0)}
    said = {pid: text.decode(errors="replace")[-1500:] for pid, text in outputs.items()}
    assert got == want, f"lost {lost}, doubled {doubled}; the processors said: {said}"
    key = dict(p.split("=", 1) for p in connect.split(";") if p)["AccountKey"]
    for text in outputs.values():
        assert key.encode() not in text and connect.encode() not in text
    # The job models stored on the blob carry no config, so no key.
    blob = account.blob_service()
    try:
        raw = blob.get_blob_client(AzureNames.for_job(job).container, AzureNames.for_job(job).blob)
        assert key.encode() not in raw.download_blob().readall()
    finally:
        blob.close()


def test_a_follower_frozen_past_the_liveness_timeout_is_dropped_rejoins_and_nothing_counts_twice(
    job: Config, tmp_path: Path
) -> None:
    # SIGSTOP past the liveness timeout: the leader drops the follower, breaks its fencing
    # lease and takes its tasks; after SIGCONT the follower's stale epoch cannot commit, the
    # leader lists it again, and it takes a new fencing lease and works on to the end.
    connect = job.get_str("azure.storage.connect")
    events = generate_page_views(16_000, seed=19)
    system = _job_module_over(job, tmp_path, events)
    processes = {
        "p1": _processor(tmp_path, connect, "p1", "host-a", key_in_env=True),
        "p2": _processor(tmp_path, connect, "p2", "host-b", key_in_env=True),
    }
    store = AzureBlobMetadataStore.for_job(job)
    observer = AzureJobObserver(job)
    outputs: dict[str, str] = {}
    try:
        deadline = time.monotonic() + 120
        seen = observer.observe()
        while seen.published != ("p1", "p2") or seen.leader is None or _committed(store) < 20:
            assert time.monotonic() < deadline, "the processors did not share the work in 120 s"
            assert all(p.poll() is None for p in processes.values()), "a processor ended early"
            time.sleep(0.2)
            seen = observer.observe()
        frozen = next(pid for pid in processes if pid != seen.leader)
        os.killpg(processes[frozen].pid, signal.SIGSTOP)
        deadline = time.monotonic() + 60
        while observer.observe().published != (seen.leader,):
            assert time.monotonic() < deadline, f"{frozen} was not dropped in 60 s"
            time.sleep(0.2)
        time.sleep(1.0)  # the leader works on the frozen one's former tasks meanwhile
        os.killpg(processes[frozen].pid, signal.SIGCONT)
        deadline = time.monotonic() + 60
        while observer.observe().published != ("p1", "p2"):
            assert time.monotonic() < deadline, f"{frozen} was not listed again in 60 s"
            time.sleep(0.2)
        for pid, process in processes.items():
            output, _ = process.communicate(timeout=240)
            outputs[pid] = output.decode(errors="replace")
            assert process.returncode == 0, outputs[pid][-3000:]
            assert "job finished" in outputs[pid]
        assert "took its fencing lease anew" in outputs[frozen]
    finally:
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
        observer.close()
        store.close()
    got, want = (
        system.read_frame("page-counts").groupby("key")["value"].sum().to_dict(),
        expected_counts(events),
    )
    said = {pid: text[-1500:] for pid, text in outputs.items()}
    assert got == want, f"the processors said: {said}"


#: The frozen follower's module: the quickstart, with its process group stopping itself
#: (SIGSTOP) right after the fence check of its n-th checkpoint commit, before the writes. The
#: committing thread stops the others of its group (its Spark JVM), then itself with a SIGSTOP
#: sent to that thread, which stops the process before the thread leaves the kernel. A SIGSTOP
#: sent to the whole group wakes the process's main thread to stop it, and until the scheduler
#: runs that thread the committing thread went on: under load it sent its commit first (CI29).
#: Sending both stopped the process twice when the group stop came first (CI32).
_FROZEN_AFTER_FENCE_CHECK = """
import os, signal, threading
from samza_nb.metadata.azure import AzureBlobMetadataStore, AzureWriteGuard
from azjob import app

_commits = []
_put_all, _verify = AzureBlobMetadataStore.put_all, AzureWriteGuard.verify

def put_all(self, entries, **options):
    if options.get("guard") is not None and any("samza-nb-checkpoint" in key for key in entries):
        _commits.append(None)
    return _put_all(self, entries, **options)

def verify(self):
    _verify(self)
    if len(_commits) == {nth} and not getattr(verify, "frozen", False):
        verify.frozen = True
        print("freezing after the fence check of checkpoint commit {nth}", flush=True)
        me, group = os.getpid(), os.getpgid(0)
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != me:
                try:
                    fields = open(f"/proc/{entry}/stat").read().rpartition(")")[2].split()
                except OSError:
                    continue
                if int(fields[2]) == group:
                    os.kill(int(entry), signal.SIGSTOP)
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)

AzureBlobMetadataStore.put_all, AzureWriteGuard.verify = put_all, verify
"""


def _ended_early(said: dict[str, Path]) -> str:
    tails = {pid: path.read_text(errors="replace")[-1500:] for pid, path in said.items() if path.exists()}
    return f"a processor ended early; the processors said: {tails}"


def _stopped(process: subprocess.Popen[bytes]) -> bool:
    stat = Path(f"/proc/{process.pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "T"


def test_a_follower_frozen_between_its_fence_check_and_its_commit_never_overwrites_the_leaders(
    job: Config, tmp_path: Path
) -> None:
    # The follower stops itself after its commit passed the fence check, before its writes.
    # The leader drops it past the liveness timeout, breaks its fencing lease, takes its tasks
    # and ends the job. Resumed, the follower's checkpoint writes must not land over the
    # leader's (they would restart a finished task from the frozen epoch and count it twice);
    # it rejoins, takes a fencing lease anew and finishes.
    connect = job.get_str("azure.storage.connect")
    events = generate_page_views(16_000, seed=19)
    # On Spark the leader reads fast, and the follower's own Spark takes seconds to start: the
    # input ends only once the follower is frozen, and its second half is written once the
    # follower has joined, so the follower has work for its 4 commits and the leader cannot
    # finish the job before.
    system = _job_module_over(job, tmp_path, events[:8_000], end=False)
    (tmp_path / "azjob_frozen.py").write_text(_FROZEN_AFTER_FENCE_CHECK.replace("{nth}", "4"))
    observer = AzureJobObserver(job)
    store = AzureBlobMetadataStore.for_job(job)
    said = {pid: tmp_path / f"{pid}.out" for pid in ("p1", "p2")}
    processes = {"p1": _processor(tmp_path, connect, "p1", "host-a", key_in_env=True, output=said["p1"])}
    outputs: dict[str, str] = {}
    try:
        deadline = time.monotonic() + 120
        while observer.observe().leader != "p1":
            assert time.monotonic() < deadline, "p1 did not lead in 120 s"
            assert processes["p1"].poll() is None, "p1 ended early"
            time.sleep(0.2)
        processes["p2"] = _processor(
            tmp_path, connect, "p2", "host-b", key_in_env=True, app="azjob_frozen:app", output=said["p2"]
        )
        deadline = time.monotonic() + 120
        while observer.observe().published != ("p1", "p2"):
            assert time.monotonic() < deadline, "p2 did not join in 120 s"
            assert all(p.poll() is None for p in processes.values()), _ended_early(said)
            time.sleep(0.2)
        system.write("page-views", events[8_000:14_000])
        deadline = time.monotonic() + 120
        while not _stopped(processes["p2"]):
            assert time.monotonic() < deadline, "p2 did not reach its 4th commit in 120 s"
            assert all(p.poll() is None for p in processes.values()), _ended_early(said)
            time.sleep(0.1)
        deadline = time.monotonic() + 60
        while observer.observe().published != ("p1",):
            assert time.monotonic() < deadline, "the frozen p2 was not dropped in 60 s"
            time.sleep(0.2)
        # The last part arrives only once p2 is frozen: the leader's commits of p2's tasks move
        # past what p2's frozen commit holds (had p2 read all the input before it froze, the
        # leader's last checkpoints could be the same bytes as p2's, which is no conflict).
        system.write("page-views", events[14_000:])
        system.end_stream("page-views")
        # The leader works on alone to the end of the input: nothing commits over the frozen
        # follower's write once it lands.
        processes["p1"].wait(240)
        outputs["p1"] = said["p1"].read_text(errors="replace")
        assert processes["p1"].returncode == 0, outputs["p1"][-3000:]
        assert "job finished" in outputs["p1"]
        finished = CheckpointStore(store).read_all()
        os.killpg(processes["p2"].pid, signal.SIGCONT)
        processes["p2"].wait(240)
        outputs["p2"] = said["p2"].read_text(errors="replace")
        assert processes["p2"].returncode == 0, outputs["p2"][-3000:]
        assert "job finished" in outputs["p2"]
        assert "freezing after the fence check" in outputs["p2"]
        # Its commit is refused, nothing of it written: for a key the leader wrote since (the
        # conflict is checked first), or, where the leader's bytes for every key it commits are
        # the same as its own, for its fencing lease that the leader revoked (CI run of 12-06).
        refusals = ("was written by another processor since this one read it", "the fencing lease is no longer held")
        assert any(refusal in outputs["p2"] for refusal in refusals), f"p2 said:\n{outputs['p2'][-4000:]}"
        # Whether it then re-lists (and takes its fencing lease anew) or first sees that the job
        # has finished is a race with the leader's end; either way it moved no checkpoint back.
        assert {
            task: checkpoint.offsets for task, checkpoint in CheckpointStore(store).read_all().items()
        } == {task: checkpoint.offsets for task, checkpoint in finished.items()}
    finally:
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
        observer.close()
        store.close()
    got, want = (
        system.read_frame("page-counts").groupby("key")["value"].sum().to_dict(),
        expected_counts(events),
    )
    assert got == want, f"the processors said: { {pid: text[-1500:] for pid, text in outputs.items()} }"
