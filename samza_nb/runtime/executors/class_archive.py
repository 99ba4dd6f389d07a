"""The Spark driver's class-data archive: a driver JVM that maps Spark's classes ready-made.

A Spark driver JVM loads thousands of classes from Spark's jars at every start, and reading,
parsing and verifying them is most of the CPU a start costs. Java's application class-data
sharing (AppCDS) writes the classes one run loaded into an archive (``-XX:ArchiveClassesAtExit``)
that later JVMs map instead of loading (``-XX:SharedArchiveFile``). On this project's 2-core
machine a driver that starts and runs two small jobs takes about half the CPU with it
(docs/performance.md, "Spark's start").

``build_archive()`` (``make install`` and ``make test`` run
``python -m samza_nb.runtime.executors.class_archive [--if-missing]``)
runs Spark jobs like samza_nb's in a child process whose driver dumps its classes when it exits, waits
for that exit, and renames the archive into place only when it is whole. ``get_spark`` launches
its driver with the archive when this environment has one: the archive's name carries the Java
and the Spark it was made with, so another JDK or Spark never reads it; without one, nothing
changes.

A driver with the archive is launched with the empty conf folder on its class path that an
archive needs (samza_nb/spark_classes.py), its defaults given by ``--properties-file`` and its
log4j2 file by ``-Dlog4j2.configurationFile``: the same two files of the same folder, read the
same way. Its executors on a standalone cluster that samza_nb started map the archive too (their
workers have that empty folder on their class path); elsewhere an executor finds no archive, or
one for another class path, and loads its classes as before, without a word.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from samza_nb.errors import SamzaNbError
from samza_nb.spark_classes import archive_path, dump_classes_at_exit

__all__ = ["build_archive"]

#: A dump takes a few seconds after the job; this bounds a child that hangs.
_BUILD_TIMEOUT_S = 300


def build_archive() -> Path:
    """Make this environment's archive (again); returns its path. Raises SamzaNbError when
    Java is missing or the child job fails (the driver then starts as it would without)."""
    archive = archive_path()
    if archive is None:
        msg = "the Spark class-data archive needs Java: no JAVA_HOME and no java on PATH"
        raise SamzaNbError(msg)
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    started = time.monotonic()
    env = {**os.environ, "SAMZA_NB_SPARK_MASTER": "local[2]"}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run(
        [sys.executable, "-m", "samza_nb.runtime.executors.class_archive", "--dump-to", str(partial)],
        env=env,
        capture_output=True,
        text=True,
        timeout=_BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        said = (done.stdout + done.stderr)[-2000:]
        msg = f"the Spark class-data archive was not made (exit {done.returncode}):\n{said}"
        raise SamzaNbError(msg)
    partial.replace(archive)
    for stale in archive.parent.glob("driver-*.jsa"):
        if stale != archive:
            stale.unlink(missing_ok=True)
    print(f"Spark class-data archive {archive} ({archive.stat().st_size >> 20} MiB, {time.monotonic() - started:.0f} s)")
    return archive


def _slot_sum(index: int, values: Iterable[int]) -> Iterator[tuple[int, int]]:
    yield index, sum(values)


def _dump(partial: Path) -> None:
    """The child of :func:`build_archive`: run the kinds of Spark jobs samza_nb runs (an epoch's
    slots, mapPartitionsWithIndex over a parallelized range, in a job group; a DataFrame to
    pandas over Arrow), stop, and wait until the JVM has exited (it writes the archive as it
    exits)."""
    from pyspark import SparkContext

    from samza_nb.runtime.executors.spark import get_spark, stop_spark

    dump_classes_at_exit(partial)

    spark = get_spark()
    jvm = SparkContext._gateway.proc if SparkContext._gateway is not None else None
    context = spark.sparkContext
    slots = context.parallelize(range(4), 4)
    for epoch in range(3):
        context.setJobGroup(f"class-archive-{epoch}", "an epoch's slots", interruptOnCancel=True)
        slots.mapPartitionsWithIndex(_slot_sum, True).collect()
    spark.createDataFrame([(i, str(i)) for i in range(100)], "n long, s string").groupBy("s").count().toPandas()
    stop_spark()
    if jvm is not None:
        jvm.stdin.close()  # the gateway exits when its stdin closes, as when this process ends
        jvm.wait(_BUILD_TIMEOUT_S)


def main(argv: list[str]) -> int:
    """``--dump-to PATH``: the child's part; else make the archive (``--if-missing``: unless
    there is one). Not making it is a warning, not a failure: Spark starts as it would without."""
    if argv[:1] == ["--dump-to"]:
        _dump(Path(argv[1]))
        return 0
    existing = archive_path()
    if "--if-missing" in argv and existing is not None and existing.is_file():
        return 0
    try:
        build_archive()
    except (SamzaNbError, subprocess.TimeoutExpired, OSError) as error:
        print(f"warning: {error}; Spark drivers start without it", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
