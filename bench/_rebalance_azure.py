"""Azure leader failover: seconds from SIGKILL of the leader to a new job model running.

Three processor processes (``samza-nb run`` on the local executor) run the page-views job with
``job.coordinator.factory=azure`` on Azurite (the engine room's, or the account in
``$SAMZA_NB_AZURE_CONNECTION_STRING``). The leader is SIGKILLed; an observer that never joins
the group (AzureJobObserver) times, from the kill:

  - gone:      another processor holds the page blob's lease (the dead leader's lease expired
               and a liveness check took it),
  - published: the new leader published a model without the dead one,
  - running:   that model's barrier is END (every survivor joined; moved tasks start),

beside the bound: lease duration + one leader-liveness check (the lease runs at most a lease
duration after the leader's last renewal; the next check takes it), and the ceiling: the bound
plus the debounce and one membership check (the new leader's first round). Timings are
shortened from Samza's (lease 60 s renewed every 45 s, checks 10 s / 5 s); Azurite refuses
leases under 15 s.

    .venv/bin/python bench/_rebalance_azure.py [--lease-ms 15000] [--events 20000]

``bench/rebalance.py`` (ZooKeeper) prints these rows too: it calls
:func:`measure_azure_leader_failover`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _waiting import wait_for

from samza_nb.config import Config
from samza_nb.coordination.azure import AzureJobObserver, AzureObservation
from samza_nb.examples.page_views import generate_page_views, write_page_views
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.services import read_service_env
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import unique_name

MODULE = """
from samza_nb.examples.page_views import build_app
from samza_nb.systems import EmbeddedSystem
app = build_app(EmbeddedSystem("embedded", path={path!r}), name={name!r})
"""
PROCESSORS = (("p1", "host-a"), ("p2", "host-b"), ("p3", "host-c"))


def _timings(lease_ms: int, check_ms: int, debounce_ms: int) -> dict[str, str]:
    return {
        "job.debounce.time.ms": str(debounce_ms),
        "job.coordinator.azure.heartbeat.interval.ms": "500",
        "job.coordinator.azure.liveness.timeout.ms": "3000",
        "job.coordinator.azure.leader.check.interval.ms": str(check_ms),
        "job.coordinator.azure.membership.check.interval.ms": "500",
        "job.coordinator.azure.barrier.check.interval.ms": "200",
        "job.coordinator.azure.barrier.timeout.ms": "10000",
        "job.coordinator.azure.upgrade.check.interval.ms": "200",
        "job.coordinator.azure.lease.duration.ms": str(lease_ms),
        "job.coordinator.azure.lease.renew.interval.ms": str(min(lease_ms // 3, 5000)),
    }


def _running_on(observation: AzureObservation, pids: set[str]) -> bool:
    model = observation.model
    return (
        observation.barrier == "END"
        and observation.barrier_version == observation.version
        and model is not None
        and set(model.containers) == pids
    )


def measure_azure_leader_failover(
    *, lease_ms: int = 15_000, check_ms: int = 1_000, debounce_ms: int = 1_000, events: int = 20_000
) -> dict[str, Any]:
    """Kill the leader of three Azure processor processes; seconds to a new model running.

    Returns ``victim``, ``gone_s`` (lease taken by another), ``published_s``, ``running_s``,
    ``bound_s`` (lease + one liveness check), ``ceiling_s`` (+ debounce and a membership
    check), ``moved`` (tasks that changed processor), ``moved_bound`` (the tasks the dead
    leader held) and ``relocated`` (tasks now at another location).
    """
    env = dict(os.environ)
    env.setdefault(
        "SAMZA_NB_AZURE_CONNECTION_STRING", read_service_env()["SAMZA_NB_AZURE_CONNECTION_STRING"]
    )
    os.environ["SAMZA_NB_AZURE_CONNECTION_STRING"] = env["SAMZA_NB_AZURE_CONNECTION_STRING"]
    timings = _timings(lease_ms, check_ms, debounce_ms)
    name = unique_name("rebalance-azure")
    job = Config({"app.name": name, **timings})
    processes: dict[str, subprocess.Popen[bytes]] = {}
    with tempfile.TemporaryDirectory(prefix="samza-nb-rebalance-azure-") as folder:
        data = Path(folder)
        system = EmbeddedSystem("embedded", path=data / "log")
        write_page_views(system, generate_page_views(events, seed=5), end=False)
        (data / "azjob.py").write_text(MODULE.format(path=str(data / "log"), name=name))
        settings = {
            "job.coordinator.factory": "azure",
            "job.host-affinity.enabled": "true",
            "task.max.epoch.messages": "200",
            "task.epoch.min.interval.ms": "100",
            **timings,
        }
        observer = AzureJobObserver(job)
        try:
            for pid, location in PROCESSORS:
                argv = [
                    sys.executable,
                    "-m",
                    "samza_nb.cli",
                    "run",
                    "azjob:app",
                    "--executor",
                    "local",
                ]
                for key, value in {
                    **settings,
                    "processor.id": pid,
                    "processor.locations": location,
                }.items():
                    argv += ["--set", f"{key}={value}"]
                processes[pid] = subprocess.Popen(
                    argv, cwd=data, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )  # fmt: skip
            everyone = {pid for pid, _ in PROCESSORS}

            def settled() -> AzureObservation | None:
                observation = observer.observe()
                return (
                    observation
                    if _running_on(observation, everyone) and observation.leader
                    else None
                )

            before = wait_for("model for three processors", 180, settled)
            victim = str(before.leader)
            survivors = everyone - {victim}
            held = {t for t, (pid, _) in before.assignment.items() if pid == victim}
            os.killpg(processes[victim].pid, signal.SIGKILL)
            killed = time.monotonic()
            gone = published = running = None
            after = before
            while running is None and time.monotonic() - killed < lease_ms / 1000 + 120:
                observation = observer.observe()
                now = time.monotonic() - killed
                newer = int(observation.version or 0) > int(before.version or 0)
                if gone is None and observation.leader in survivors:
                    gone = now
                if published is None and newer and victim not in observation.published:
                    published = now
                if newer and _running_on(observation, survivors):
                    running, after = now, observation
                time.sleep(0.05)
            moved = {
                t for t, (pid, _) in after.assignment.items() if before.assignment[t][0] != pid
            }
            relocated = {
                t for t, (_, loc) in after.assignment.items() if before.assignment[t][1] != loc
            }
        finally:
            for process in processes.values():
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(30)
            with contextlib.suppress(Exception):
                AzureBlobMetadataStore.for_job(job).delete_container()
            with observer.account.blob_service() as blobs, contextlib.suppress(Exception):
                blobs.delete_container(observer.names.container)
            with observer.account.table_service() as tables, contextlib.suppress(Exception):
                tables.delete_table(observer.names.table)
            observer.close()
    bound = (lease_ms + check_ms) / 1000
    return {
        "victim": f"leader ({victim})",
        "gone_s": gone,
        "published_s": published,
        "running_s": running,
        "bound_s": bound,
        "ceiling_s": bound + debounce_ms / 1000 + 0.5,
        "moved": len(moved),
        "moved_bound": len(held),
        "relocated": len(relocated),
    }


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lease-ms", type=int, default=15_000)
    parser.add_argument("--check-ms", type=int, default=1_000)
    parser.add_argument("--debounce-ms", type=int, default=1_000)
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args(argv)
    row = measure_azure_leader_failover(
        lease_ms=args.lease_ms,
        check_ms=args.check_ms,
        debounce_ms=args.debounce_ms,
        events=args.events,
    )
    print(
        f"azure      {row['victim']:<15} gone {_seconds(row['gone_s']):>6} s  published "
        f"{_seconds(row['published_s']):>6} s  running {_seconds(row['running_s']):>6} s  (bound: "
        f"lease + one liveness check {row['bound_s']:.2f} s, ceiling {row['ceiling_s']:.2f} s)  "
        f"moved {row['moved']} tasks (bound {row['moved_bound']}), {row['relocated']} to another location"
    )
    return 0 if row["running_s"] is not None else 1


if __name__ == "__main__":
    raise SystemExit(main())
