"""Spark master URLs: checked before a JVM starts, and whether a master's executors share this
machine's disk.

A ``local`` master runs its executors in this JVM; a standalone master bound to a loopback
address can only have workers on this machine (they connect to it there). Any other master
(``spark://`` on a routable address, ``yarn``, ``k8s://``) may place executors on other hosts:
a file on this machine's disk (the embedded log, a task's store) is not theirs.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import sys
import time
from typing import Any

from samza_nb.config import Config, environment
from samza_nb.errors import ConfigError, ServiceError

__all__ = ["DEFAULT_MASTER", "LOCAL_MASTER", "check_master", "check_master_url", "effective_master", "is_local_master", "on_this_machine",
           "running_context"]

DEFAULT_MASTER = "local[*]"
#: Masters whose executors run inside the driver's JVM, on this process's filesystem.
LOCAL_MASTER = re.compile(r"^local(\[[^\]]*\])?$")
_ONE_MACHINE = re.compile(r"^local-cluster\[\d+,\s*\d+,\s*\d+\]$")
_MASTER = re.compile(
    r"^(local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]"
    r"|spark://[^/\s]+(:\d+)?(,[^/\s]+(:\d+)?)*|yarn|k8s://\S+|mesos://\S+)$"
)
_MASTER_TRIES = 3


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]``: executors in the driver's JVM."""
    return bool(LOCAL_MASTER.match(master))


def on_this_machine(master: str) -> bool:
    """Whether every executor of ``master`` runs on this machine: a local master, a
    ``local-cluster``, or a standalone master whose every address is a loopback one."""
    if is_local_master(master) or _ONE_MACHINE.match(master):
        return True
    if not master.startswith("spark://"):
        return False
    return all(_loopback(address.rpartition(":")[0] or address) for address in master[8:].split(","))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may be any machine's


def effective_master(config: Config) -> str:
    """The master a job of ``config`` runs on, without starting Spark: ``spark.master``, else
    the running session's (a notebook's), else ``$SAMZA_NB_SPARK_MASTER``, else ``local[*]``."""
    if "spark.master" in config:
        return str(config["spark.master"])
    context = running_context()
    if context is not None:
        return str(context.master)
    return environment("SAMZA_NB_SPARK_MASTER") or DEFAULT_MASTER


def running_context() -> Any:
    """The process's live SparkContext (a notebook's, the test suite's, a job's), else None."""
    if "pyspark" not in sys.modules:
        return None  # no context without pyspark imported; importing it costs a second
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is not None and getattr(context, "_jsc", None) is not None:
        return context
    return None


def check_master_url(master: str) -> None:
    """Fail in one line on a malformed master URL (nothing is contacted)."""
    if not _MASTER.match(master):
        msg = (
            f"spark.master={master!r} is not a Spark master URL; use local[*], local[N], "
            "spark://host:port, yarn or k8s://..."
        )
        raise ConfigError(msg)


def check_master(master: str) -> None:
    """Fail in one line, before a JVM starts, on a malformed master URL or a standalone
    master that does not answer (bounded tries), instead of Spark's minute of retries."""
    check_master_url(master)
    if not master.startswith("spark://"):
        return
    for address in master[len("spark://"):].split(","):
        host, _, port = address.rpartition(":")
        error: OSError | None = None
        for attempt in range(_MASTER_TRIES):
            try:
                socket.create_connection((host or address, int(port or 7077)), timeout=2).close()
                error = None
                break
            except OSError as failure:
                error = failure
                time.sleep(0.2 * (attempt + 1))
        if error is not None:
            msg = (
                f"the Spark master {master} does not answer at {address} after {_MASTER_TRIES} "
                f"tries ({error.strerror or error}); start it (samza-nb services up spark) or "
                "fix spark.master"
            )
            raise ServiceError(msg, service="spark")
