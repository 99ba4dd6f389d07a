"""The Spark driver's class-data archive (samza_nb/runtime/executors/class_archive.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from samza_nb import spark_classes
from samza_nb.runtime.executors.class_archive import build_archive
from samza_nb.runtime.executors.spark import spark_conf_dir
from samza_nb.spark_classes import archive_path, driver_launch, empty_conf_folder

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def archive() -> Path:
    """This environment's archive (``make install`` made it; made here when it did not)."""
    path = archive_path()
    assert path is not None, "no Java found"
    return path if path.is_file() else build_archive()


def test_the_driver_maps_the_archive_and_reads_the_conf_folders_files(archive: Path, spark: SparkSession) -> None:
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    jvm = gateway.proc
    # The JVM maps the archive's file; one it could not use would not be in its memory map.
    assert str(archive) in Path(f"/proc/{jvm.pid}/maps").read_text()
    conf = spark.sparkContext.getConf()
    assert f"-XX:SharedArchiveFile={archive}" in (conf.get("spark.driver.defaultJavaOptions") or "")
    # The suite's own spark-defaults.conf (tests/conftest.py) reached the driver JVM ...
    assert "-XX:TieredStopAtLevel=1" in (conf.get("spark.driver.extraJavaOptions") or "")
    # ... and so did the folder's log4j2 file, with its level for everything else.
    root = spark._jvm.org.apache.logging.log4j.LogManager.getRootLogger()  # type: ignore[union-attr]
    assert root.getLevel().toString() == "ERROR"
    # The launch's environment was put back: a process started from this one (a processor, a
    # kernel's job) finds the conf folder itself instead of inheriting the empty one.
    assert os.environ.get("SPARK_CONF_DIR") != str(empty_conf_folder())
    assert "PYSPARK_SUBMIT_ARGS" not in os.environ


def test_a_user_who_set_spark_submit_arguments_or_turned_it_off_keeps_the_plain_launch(
    archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf_dir = spark_conf_dir()
    assert conf_dir is not None
    launch = driver_launch(conf_dir)
    assert launch is not None
    assert launch.environment["PYSPARK_SUBMIT_ARGS"].startswith(
        f"--properties-file {conf_dir / 'spark-defaults.conf'} "
    )
    assert not any(Path(launch.environment["SPARK_CONF_DIR"]).iterdir())
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 2g pyspark-shell")
    assert driver_launch(conf_dir) is None
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    monkeypatch.setenv("SAMZA_NB_SPARK_CLASS_ARCHIVE", "off")
    assert driver_launch(conf_dir) is None


def test_an_archive_the_jvm_cannot_use_is_passed_over_without_a_word(archive: Path, tmp_path: Path) -> None:
    # An archive made for another class path (say, Spark's jars moved): the JVM starts as it
    # would without it and prints nothing a notebook cell would show.
    java = spark_classes.java()
    assert java is not None
    another_class_path = ["-cp", str(tmp_path)]

    def java_version(*options: str) -> str:
        done = subprocess.run(
            [str(java), f"-XX:SharedArchiveFile={archive}", *options, *another_class_path, "-version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return (done.stdout + done.stderr).lower()

    assert "archive" in java_version()  # what the quiet options keep out
    said = java_version(*spark_classes.QUIET.split())
    assert "archive" not in said and "cds" not in said, said


_ON_THE_STANDALONE_CLUSTER = """
from pathlib import Path
from samza_nb.runtime.executors.spark import get_spark

context = get_spark({{"spark.master": {master!r}}}).sparkContext
assert context.parallelize(range(4), 4).map(lambda n: n + 1).sum() == 10
executors = []
for process in Path("/proc").iterdir():
    try:
        argv = (process / "cmdline").read_bytes().split(b"\\0")
    except OSError:
        continue
    if any(arg.endswith(b".CoarseGrainedExecutorBackend") for arg in argv) and context.applicationId.encode() in argv:
        executors.append(process)
print(len(executors), sum({archive!r} in (process / "maps").read_text() for process in executors))
"""


@pytest.mark.services
def test_executors_of_the_standalone_cluster_map_the_archive_too(archive: Path, spark_standalone: str) -> None:
    # The cluster's workers put the drivers' empty conf folder on their executors' class path.
    done = subprocess.run(
        [sys.executable, "-c", _ON_THE_STANDALONE_CLUSTER.format(master=spark_standalone, archive=str(archive))],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    executors, mapping = (int(n) for n in done.stdout.split()[-2:])
    assert executors >= 1 and mapping == executors, done.stdout + done.stderr[-2000:]
