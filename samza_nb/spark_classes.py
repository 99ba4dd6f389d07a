"""Where this environment's Spark class-data archive is, and how a JVM maps it.

A JVM maps a class-data archive (Java's AppCDS) only for the class path it was made with, and a
class path may not hold a folder with files in it. Spark puts its conf folder on the class path
of every JVM it launches, drivers (spark-submit) and executors (a standalone worker) alike. So
every JVM that maps the archive has the same empty conf folder on its class path, and reads its
log4j2 file by ``-Dlog4j2.configurationFile`` instead. The archive is made, and the drivers
launched with it, in runtime/executors/class_archive.py; the standalone workers whose executors
map it are started in services/spark.py.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
from pathlib import Path

from samza_nb.config import environment

__all__ = ["QUIET", "archive_path", "empty_conf_folder", "existing_archive", "java_options"]

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


def java_options(archive_option: str, conf_dir: Path) -> str:
    """The options of a JVM that maps (or, with ``-XX:ArchiveClassesAtExit``, makes) the
    archive, with the log4j2 file of ``conf_dir``."""
    return f"{archive_option} {QUIET} -Dlog4j2.configurationFile=file:{conf_dir / 'log4j2.properties'}"
