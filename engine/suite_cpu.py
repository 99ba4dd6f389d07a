"""Where a run's CPU goes, by kind of process: every process's CPU time read from /proc once a
second while the run lasts, then summed by what the process is (a Spark JVM, a pytest worker,
a processor process, ZooKeeper, Azurite, chromium, ...).

    .venv/bin/python engine/suite_cpu.py record /tmp/cpu.json --seconds 3600 &
    make test
    kill %1                                   # SIGTERM: the samples are written
    .venv/bin/python engine/suite_cpu.py report /tmp/cpu.json [/tmp/other.json ...]

A process is counted from its first sample to its last: a process that lives less than a
second may be missed, and the CPU of its last second is not counted. Reports of several files
are printed side by side (one run before a change, one after).
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


def _sample(seen: dict[tuple[int, int], list[Any]], ticks_per_second: int) -> None:
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
                seen[key] = [raw.replace(b"\0", b" ").decode(errors="replace")[:4000], cpu, cpu]
            seen[key][2] = cpu
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
    seen: dict[tuple[int, int], list[Any]] = {}
    deadline = time.monotonic() + seconds
    while not stop and time.monotonic() < deadline:
        _sample(seen, ticks_per_second)
        time.sleep(1.0)
    rows = [
        {"pid": pid, "command": command, "cpu_s": last - first}
        for (pid, _start), (command, first, last) in seen.items()
    ]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record", help="sample every process until stopped")
    recording.add_argument("out", type=Path)
    recording.add_argument("--seconds", type=float, default=3600.0, help="stop after this long at most")
    reporting = commands.add_parser("report", help="CPU-s by kind of process, one column per file")
    reporting.add_argument("files", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.seconds)
    else:
        report(args.files)


if __name__ == "__main__":
    main()
