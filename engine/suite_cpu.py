"""Where a run's CPU goes, by kind of process and by test: every process's CPU time read from
/proc once a second while the run lasts, then summed by what the process is (a Spark JVM, a
pytest worker, a processor process, ZooKeeper, Azurite, chromium, ...) or by the test it ran for.

    .venv/bin/python engine/suite_cpu.py record /tmp/cpu.json --seconds 3600 &
    SAMZA_NB_TEST_LOG=/tmp/tests.jsonl make test
    kill %1                                   # SIGTERM: the samples are written
    .venv/bin/python engine/suite_cpu.py report /tmp/cpu.json [/tmp/other.json ...]
    .venv/bin/python engine/suite_cpu.py tests /tmp/cpu.json /tmp/tests.jsonl [--top 40]

A process is counted from its first sample to its last: a process that lives less than a
second may be missed, and the CPU of its last second is not counted. Reports of several files
are printed side by side (one run before a change, one after).

By test: every test runs with ``SAMZA_NB_TEST`` naming it (tests/conftest.py), so a process it
starts (a processor, a kernel, a browser) carries its name; a second of CPU of such a process
goes to that test while it runs. A pytest worker's own CPU, and its Spark JVM's (shared by the
tests of the worker), go to the test the worker was running then (``SAMZA_NB_TEST_LOG``: when
each test started and ended, written by the workers). The rest (the services, and what outlived
its test) is listed by kind.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

#: What a process is, by the first of these its command line holds (checked in order).
KINDS = (
    ("pip install", "install (pip, npm)"),
    ("npm install", "install (pip, npm)"),
    ("QuorumPeerMain", "ZooKeeper servers"),
    ("zookeeper/log4j2", "ZooKeeper servers"),
    ("org.apache.spark", "Spark JVMs"),
    ("spark-classes", "Spark JVMs"),
    ("samza_nb.cli run", "processor processes"),
    ("cluster_job.py", "processor processes"),
    ("spark_daemon", "PySpark Python workers"),
    ("pyspark.daemon", "PySpark Python workers"),
    ("exec(eval(sys.stdin", "pytest workers (xdist)"),
    ("ipykernel", "notebook kernels"),
    ("jupyterlab", "JupyterLab servers"),
    ("chrom", "chromium"),
    ("azurite", "Azurite"),
    ("tansu", "Tansu (Kafka broker)"),
    ("npm", "install (pip, npm)"),
)


def kind_of(command: str) -> str:
    return next((kind for marker, kind in KINDS if marker in command), "other")


def _test_of(pid: str) -> str | None:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(b"SAMZA_NB_TEST="):
            return entry[len(b"SAMZA_NB_TEST=") :].decode(errors="replace")
    return None


def _sample(seen: dict[tuple[int, int], dict[str, Any]], ticks_per_second: int) -> None:
    now = round(time.time(), 1)
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            cpu = (int(fields[11]) + int(fields[12])) / ticks_per_second
            key = (int(name), int(fields[19]))  # pid and start time: a reused pid is a new process
            if key not in seen:
                raw = Path(f"/proc/{name}/cmdline").read_bytes()
                seen[key] = {
                    "pid": int(name),
                    "ppid": int(fields[1]),
                    "command": raw.replace(b"\0", b" ").decode(errors="replace")[:4000],
                    "test": _test_of(name),
                    "samples": [(now, cpu)],
                }
            elif cpu != seen[key]["samples"][-1][1]:
                seen[key]["samples"].append((now, cpu))
        except (OSError, IndexError, ValueError):
            continue  # the process ended while it was read


def record(out: Path, seconds: float) -> None:
    """Sample until SIGTERM, SIGINT or ``seconds``; write one row per process to ``out``."""
    stop = False

    def stopping(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    ticks_per_second = os.sysconf("SC_CLK_TCK")
    seen: dict[tuple[int, int], dict[str, Any]] = {}
    deadline = time.monotonic() + seconds
    while not stop and time.monotonic() < deadline:
        _sample(seen, ticks_per_second)
        time.sleep(1.0)
    rows = []
    for process in seen.values():
        samples = process["samples"]
        rows.append({**process, "cpu_s": samples[-1][1] - samples[0][1]})
    out.write_text(json.dumps(rows))


def report(files: list[Path]) -> None:
    by_file = []
    for path in files:
        totals: Counter[str] = Counter()
        for row in json.loads(path.read_text()):
            totals[kind_of(row["command"])] += row["cpu_s"]
        by_file.append(totals)
    kinds = sorted({kind for totals in by_file for kind in totals}, key=lambda k: -by_file[0][k])
    width = max(len(path.name) for path in files) + 2
    print(f"{'CPU-s':<28}" + "".join(f"{path.name:>{width}}" for path in files))
    for kind in kinds:
        print(f"{kind:<28}" + "".join(f"{totals[kind]:>{width},.0f}" for totals in by_file))
    print(f"{'total':<28}" + "".join(f"{sum(totals.values()):>{width},.0f}" for totals in by_file))


def _is_pytest_worker(command: str) -> bool:
    return kind_of(command) == "pytest workers (xdist)"


def by_test(samples_file: Path, test_log: Path, top: int) -> None:
    """CPU-s by test and by test file (see the module's docstring for how a second is given)."""
    rows = json.loads(samples_file.read_text())
    runs: dict[int, list[tuple[float, float, str]]] = {}  # worker pid: (start, end, test)
    windows: dict[str, tuple[float, float]] = {}
    for line in test_log.read_text().splitlines():
        run = json.loads(line)
        runs.setdefault(run["pid"], []).append((run["start"], run["end"], run["test"]))
        windows[run["test"]] = (run["start"], run["end"])
    parent = {row["pid"]: row["ppid"] for row in rows}
    workers = {row["pid"] for row in rows if _is_pytest_worker(row["command"])}

    def worker_of(pid: int) -> int | None:
        for _ in range(20):
            if pid in workers:
                return pid
            if pid not in parent:
                return None
            pid = parent[pid]
        return None

    def running_on(worker: int, at: float) -> str | None:
        return next((test for start, end, test in runs.get(worker, ()) if start <= at <= end + 1.0), None)

    tests: Counter[str] = Counter()
    rest: Counter[str] = Counter()
    for row in rows:
        worker = worker_of(row["pid"])
        samples = row["samples"]
        for (_, before), (at, cpu) in zip(samples, samples[1:], strict=False):
            window = windows.get(row["test"] or "")
            if window is not None and window[0] <= at <= window[1] + 1.0 and row["pid"] not in workers:
                tests[row["test"]] += cpu - before
                continue
            test = running_on(worker, at) if worker is not None else None
            if test is not None:
                tests[test] += cpu - before
            else:
                rest[kind_of(row["command"])] += cpu - before
    files: Counter[str] = Counter()
    for test, cpu in tests.items():
        files[test.split("::", 1)[0]] += cpu
    print(f"CPU-s given to tests {sum(tests.values()):,.0f}, to no test {sum(rest.values()):,.0f}")
    print("\nby file:")
    for name, cpu in files.most_common(top):
        print(f"{cpu:>8,.0f}  {name}")
    print("\nby test:")
    for name, cpu in tests.most_common(top):
        print(f"{cpu:>8,.0f}  {name}")
    print("\nno test, by kind:")
    for name, cpu in rest.most_common():
        print(f"{cpu:>8,.0f}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record", help="sample every process until stopped")
    recording.add_argument("out", type=Path)
    recording.add_argument("--seconds", type=float, default=3600.0, help="stop after this long at most")
    reporting = commands.add_parser("report", help="CPU-s by kind of process, one column per file")
    reporting.add_argument("files", type=Path, nargs="+")
    testing = commands.add_parser("tests", help="CPU-s by test and by test file")
    testing.add_argument("samples", type=Path)
    testing.add_argument("test_log", type=Path, help="the SAMZA_NB_TEST_LOG file of the same run")
    testing.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.seconds)
    elif args.command == "report":
        report(args.files)
    else:
        by_test(args.samples, args.test_log, args.top)


if __name__ == "__main__":
    main()
