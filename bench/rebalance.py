"""Rebalance after a processor dies: seconds from SIGKILL to a new job model running.

Three processor processes (``samza-nb run`` on the local executor, locations host-a, host-a,
host-b) run the page-views job on ZooKeeper. One is SIGKILLed; an observer that never joins the
group (ZkJobObserver, as ``%samza attach`` uses) times, from the kill:

  - gone:      its ephemeral node disappears (ZooKeeper expired the session),
  - published: the leader publishes a model without it (after the debounce),
  - running:   that model's barrier is DONE (every survivor agreed; moved tasks start),

and prints "running" beside the lower bound (session timeout + debounce) and the moved tasks
(to another processor; to another location) beside their lower bound (the tasks the dead
processor held). Host affinity places tasks by location (Samza's GroupByContainerIds), so tasks
may swap between the two host-a processors without leaving their stores' location. Scenarios: a follower, then (after
the follower rejoined) the leader. Short timeouts (session 6 s, debounce 1 s; Samza's defaults
are 30 s + 20 s). ZooKeeper expires sessions on its tick (2 s here), so one expiry takes
between the session timeout minus the client's ping gap and the session timeout plus one tick.

Other coordinators add rows: a module ``bench/_rebalance_<name>.py`` defining
``measure_<name>_leader_failover()`` returning a dict (or a list of dicts) with keys of
:class:`Row` (``victim``, ``gone_s``, ``published_s``, ``running_s``, ``bound_s``,
``ceiling_s``, ``moved``, ``moved_bound``, ``relocated``; missing ones print as "–") is run and
printed after the ZooKeeper rows when present (``bench/_rebalance_azure.py`` →
``measure_azure_leader_failover``).

    .venv/bin/python bench/rebalance.py [--session-ms 6000] [--debounce-ms 1000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _waiting import wait_for
from kazoo.client import KazooClient

from samza_nb.config import Config
from samza_nb.coordination.observation import JobObservation
from samza_nb.coordination.zk.observer import ZkJobObserver
from samza_nb.examples.page_views import generate_page_views, write_page_views
from samza_nb.model import JobModel
from samza_nb.notebook.processes import ProcessorProcess, start_processor
from samza_nb.services import read_service_env
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import unique_name

APP_NAME = "rebalance-bench"
MODULE = """
from samza_nb.model import JobModel
from samza_nb.examples.page_views import build_app
from samza_nb.systems import EmbeddedSystem
app = build_app(EmbeddedSystem("embedded", path={path!r}), name={name!r})
"""
PROCESSORS = (("p1", "host-a"), ("p2", "host-a"), ("p3", "host-b"))


@dataclass
class Row:
    """One measured failover."""

    coordinator: str
    victim: str
    gone_s: float | None
    published_s: float | None
    running_s: float | None
    bound_s: float
    ceiling_s: float | None
    moved: int
    moved_bound: int
    relocated: int | None = None


def _agreed(observation: JobObservation, processors: set[str]) -> bool:
    version = observation.latest_version
    return (
        version is not None
        and version.barrier == "DONE"
        and version.model is not None
        and set(version.model.containers) == processors
        and {p.processor_id for p in observation.processors} == processors
    )


class ZkGroup:
    """Three processor processes of one job in a fresh ZooKeeper chroot, and an observer."""

    def __init__(self, work: Path, session_ms: int, debounce_ms: int, events: int, tick_ms: int) -> None:
        self.tick_s = tick_ms / 1000
        hosts = read_service_env()["SAMZA_NB_ZK_CONNECT"].partition("/")[0]
        self.chroot = "/" + unique_name("samza-nb-bench")
        self._admin = KazooClient(hosts=hosts, timeout=10.0)
        self._admin.start(timeout=15.0)
        self._admin.ensure_path(self.chroot)
        self.connect = hosts + self.chroot
        log = work / "log"
        system = EmbeddedSystem("embedded", path=log)
        write_page_views(system, generate_page_views(events, seed=3), end=False)
        (work / "rebalance_job.py").write_text(MODULE.format(path=str(log), name=APP_NAME))
        self.work = work
        self.settings = {
            "job.coordinator.factory": "zookeeper",
            "job.coordinator.zk.connect": self.connect,
            "job.coordinator.zk.session.timeout.ms": str(session_ms),
            "job.debounce.time.ms": str(debounce_ms),
            "job.host-affinity.enabled": "true",
            "task.max.epoch.messages": "50",
            "task.epoch.min.interval.ms": "200",
        }
        self.observer = ZkJobObserver(
            self.connect, Config({"app.name": APP_NAME, "job.id": "1", **self.settings})
        )
        self.processes: dict[str, ProcessorProcess] = {}

    def start(self, pid: str, location: str) -> None:
        self.processes[pid] = start_processor(
            "rebalance_job:app", self.settings, processor_id=pid, location=location, cwd=self.work, until="forever"
        )

    def wait_agreed(self, processors: set[str], timeout: float = 120) -> JobObservation:
        def check() -> JobObservation | None:
            for pid, process in self.processes.items():
                if pid in processors and not process.alive:
                    msg = f"processor {pid} ended:\n{process.log()}"
                    raise RuntimeError(msg)
            seen = self.observer.observe()
            return seen if _agreed(seen, processors) else None

        return wait_for(f"a model over {sorted(processors)}", timeout, check)

    def close(self) -> None:
        for process in self.processes.values():
            process.kill()
        self.observer.close()
        self._admin.delete(self.chroot, recursive=True)
        self._admin.stop()
        self._admin.close()


def measure_zookeeper_failover(group: ZkGroup, victim_role: str, bound: float) -> Row:
    """SIGKILL the leader or a follower of ``group`` and time the rebalance."""
    everyone = set(group.processes)
    before = group.wait_agreed(everyone)
    leader = before.leader
    victim = leader if victim_role == "leader" else max(everyone - {leader or ""})
    assert before.latest_version is not None and before.latest_version.model is not None
    held = set(before.latest_version.model.tasks_of(victim))
    survivors = everyone - {victim}
    killed = time.monotonic()
    group.processes[victim].kill()
    gone = published = running = None
    moved: set[str] = set()
    relocated: set[str] = set()
    deadline = killed + 120
    while time.monotonic() < deadline and running is None:
        seen = group.observer.observe()
        now = time.monotonic() - killed
        if gone is None and victim not in {p.processor_id for p in seen.processors}:
            gone = now
        version = seen.latest_version
        if version is not None and version.model is not None and set(version.model.containers) == survivors:
            published = published if published is not None else now
            if version.barrier == "DONE":
                running = now
                moved = set(version.moved)
                relocated = _relocated(before.latest_version.model, version.model)
        time.sleep(0.02)
    del group.processes[victim]
    return Row(
        "zookeeper",
        f"{victim_role} ({victim})",
        gone,
        published,
        running,
        bound,
        bound + group.tick_s,
        len(moved),
        len(held),
        len(relocated),
    )


def _relocated(before: JobModel, after: JobModel) -> set[str]:
    """Tasks now at another location (a processor at the same location finds their stores)."""

    def locations(model: JobModel) -> dict[str, str | None]:
        return {t: c.location_id for c in model.containers.values() for t in c.tasks}

    then = locations(before)
    return {task for task, location in locations(after).items() if then.get(task) != location}


def zookeeper_rows(session_ms: int, debounce_ms: int, repeat: int, events: int, tick_ms: int) -> list[Row]:
    bound = (session_ms + debounce_ms) / 1000
    rows = []
    with tempfile.TemporaryDirectory(prefix="samza-nb-rebalance-") as tmp:
        group = ZkGroup(Path(tmp), session_ms, debounce_ms, events, tick_ms)
        try:
            for pid, location in PROCESSORS:
                group.start(pid, location)
            for _ in range(repeat):
                for role in ("follower", "leader"):
                    row = measure_zookeeper_failover(group, role, bound)
                    rows.append(row)
                    print(_format(row), flush=True)
                    victim = row.victim.split("(")[1].rstrip(")")
                    group.start(victim, dict(PROCESSORS)[victim])  # rejoin: back to three
        finally:
            group.close()
    return rows


def plugin_rows() -> list[Row]:
    """Rows of other coordinators' benches (``bench/_rebalance_<name>.py``), when present."""
    rows = []
    sys.path.insert(0, str(Path(__file__).parent))
    for path in sorted(Path(__file__).parent.glob("_rebalance_*.py")):
        name = path.stem.removeprefix("_rebalance_")
        measure = getattr(importlib.import_module(path.stem), f"measure_{name}_leader_failover", None)
        if measure is None:
            continue
        result = measure()
        for entry in result if isinstance(result, list) else [result]:
            row = Row(**{**{f: None for f in Row.__dataclass_fields__}, "coordinator": name, **entry})
            rows.append(row)
            print(_format(row), flush=True)
    return rows


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _format(row: Row) -> str:
    after_expiry = (
        f"  [{row.running_s - row.gone_s:.2f} s after the node went]"
        if row.running_s is not None and row.gone_s is not None
        else ""
    )
    ceiling = f", + one ZooKeeper tick {row.ceiling_s:.2f} s" if row.ceiling_s is not None else ""
    return (
        f"{row.coordinator:<10} {row.victim:<15} gone {_seconds(row.gone_s):>6} s  published "
        f"{_seconds(row.published_s):>6} s  running {_seconds(row.running_s):>6} s  (bound "
        f"{_seconds(row.bound_s)} s{ceiling}){after_expiry}  moved {row.moved} tasks, "
        f"{'–' if row.relocated is None else row.relocated} to another location (bound {row.moved_bound})"
    )


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--debounce-ms", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--tick-ms", type=int, default=2000, help="the ZooKeeper server's tickTime")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--only-zookeeper", action="store_true", help="skip other coordinators' rows")
    args = parser.parse_args(argv)
    print("coordinator victim          (seconds from SIGKILL; bound = session timeout + debounce)")
    rows = zookeeper_rows(args.session_ms, args.debounce_ms, args.repeat, args.events, args.tick_ms)
    if not args.only_zookeeper:
        rows += plugin_rows()
    return [asdict(row) for row in rows]


if __name__ == "__main__":
    main()
