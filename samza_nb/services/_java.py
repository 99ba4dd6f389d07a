"""Finding Java and the jars shipped inside the pyspark wheel (ZooKeeper and Spark run on them)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from samza_nb.errors import ServiceError

__all__ = ["java_binary", "pyspark_home"]


def java_binary(service: str) -> str:
    """``$JAVA_HOME/bin/java`` when set, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        msg = f"{service}: no Java runtime found (set JAVA_HOME or put java 17 on PATH)"
        raise ServiceError(msg, service=service)
    return found


def pyspark_home(service: str) -> Path:
    """The installed pyspark package folder, located without importing pyspark (slow)."""
    spec = importlib.util.find_spec("pyspark")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        if (Path(location) / "jars").is_dir():
            return Path(location)
    msg = f"{service}: pyspark with its jars/ folder is not installed (pip install pyspark)"
    raise ServiceError(msg, service=service)
