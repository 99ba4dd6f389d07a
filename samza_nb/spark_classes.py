"""Where this environment's Spark class-data archive is, and how a JVM maps it.

A JVM maps a class-data archive (Java's AppCDS) only for the class path it was made with, and a
class path may not hold a folder with files in it. Spark puts its conf folder on the class path
of every JVM it launches, drivers (spark-submit) and executors (a standalone worker) alike. So
every JVM that maps the archive has the same empty conf folder on its class path, and reads its
log4j2 file by ``-Dlog4j2.configurationFile`` instead. :func:`driver_launch` is how get_spark
(runtime/executors/spark.py) launches a driver with it; the archive is made in
runtime/executors/class_archive.py; the standalone workers whose executors map it are started in
services/spark.py.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from samza_nb.config import environment

__all__ = [
    "QUIET",
    "DriverLaunch",
    "archive_path",
    "driver_launch",
    "dump_classes_at_exit",
    "empty_conf_folder",
    "existing_archive",
    "java_options",
    "log4j_option",
]

#: What the JVM would print about an archive it cannot use: nothing a notebook user can act on.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _folder() -> Path:
    return Path(sys.prefix) / "share" / "samza_nb" / "spark-classes"


def java() -> Path | None:
    """The Java that launches Spark's JVMs (``$JAVA_HOME/bin/java``, else ``java`` on PATH)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _spark_home() -> Path | None:
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home).resolve()
    spec = importlib.util.find_spec("pyspark")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]).resolve() if locations else None


def archive_path() -> Path | None:
    """Where this environment's archive is, or would be: its name carries the Java and the
    Spark jars it is made from, so another JDK or Spark never reads it. None without Java or
    Spark."""
    binary, spark = java(), _spark_home()
    if binary is None or spark is None:
        return None
    stat = binary.stat()
    jars = spark / "jars"
    listed = sorted(os.listdir(jars)) if jars.is_dir() else []
    made_from = f"{binary}:{stat.st_size}:{stat.st_mtime_ns}:{spark}:{listed}"
    return _folder() / f"driver-{hashlib.sha256(made_from.encode()).hexdigest()[:16]}.jsa"


def existing_archive() -> Path | None:
    """This environment's archive when it has one and it is not turned off
    (``SAMZA_NB_SPARK_CLASS_ARCHIVE=off``)."""
    if environment("SAMZA_NB_SPARK_CLASS_ARCHIVE") == "off":
        return None
    path = archive_path()
    return path if path is not None and path.is_file() else None


def empty_conf_folder() -> Path:
    """The conf folder on the class path of every JVM that maps the archive (kept empty)."""
    folder = _folder() / "class-path-conf"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def log4j_option(conf_dir: Path) -> str:
    """The option that gives a JVM the log4j2 file of ``conf_dir`` (not on its class path)."""
    return f"-Dlog4j2.configurationFile=file:{conf_dir / 'log4j2.properties'}"


def java_options(archive_option: str, conf_dir: Path) -> str:
    """The options of a JVM that maps (or, with ``-XX:ArchiveClassesAtExit``, makes) the
    archive, with the log4j2 file of ``conf_dir``."""
    return f"{archive_option} {QUIET} {log4j_option(conf_dir)}"


#: Set in the child of ``build_archive`` (runtime/executors/class_archive.py): where its
#: driver dumps its classes as it exits.
_dump_to: Path | None = None


@dataclass(frozen=True)
class DriverLaunch:
    """How to launch a driver JVM with the archive: the environment spark-submit reads, and the
    Java options Spark prepends to the driver's own (``spark.driver.defaultJavaOptions``) and
    to its executors' (``spark.executor.defaultJavaOptions``)."""

    environment: dict[str, str]
    java_options: str
    executor_java_options: str


def _launch(conf_dir: Path, archive_option: str, archive: Path) -> DriverLaunch | None:
    if "PYSPARK_SUBMIT_ARGS" in os.environ:
        return None  # the user's own spark-submit arguments are left alone
    return DriverLaunch(
        {
            "SPARK_CONF_DIR": str(empty_conf_folder()),
            "PYSPARK_SUBMIT_ARGS": f"--properties-file {conf_dir / 'spark-defaults.conf'} pyspark-shell",
        },
        java_options(archive_option, conf_dir),
        java_options(f"-XX:SharedArchiveFile={archive}", conf_dir),
    )


def driver_launch(conf_dir: Path) -> DriverLaunch | None:
    """The launch of a driver that maps this environment's archive, with the defaults and
    log4j2 file of ``conf_dir``; None when there is no archive (or the user set
    ``PYSPARK_SUBMIT_ARGS``, or ``SAMZA_NB_SPARK_CLASS_ARCHIVE=off``)."""
    if _dump_to is not None:
        # The archive holds classes, not compiled code: the quick compiler makes it for less.
        dump = f"-XX:ArchiveClassesAtExit={_dump_to} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        return _launch(conf_dir, dump, _dump_to)
    archive = existing_archive()
    return None if archive is None else _launch(conf_dir, f"-XX:SharedArchiveFile={archive}", archive)


def dump_classes_at_exit(path: Path) -> None:
    """Launch this process's driver to write the archive to ``path`` as it exits, instead of
    mapping one (the archive's maker only)."""
    global _dump_to
    _dump_to = path
