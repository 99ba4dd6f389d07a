"""A local Spark standalone cluster: one master and two one-core workers, for multi-executor runs.

Started only on request (``samza-nb services up spark`` or the ``spark_standalone`` fixture)
because it costs three JVMs. The daemons run from the jars of the pyspark wheel via its
``bin/spark-class`` (which adds the JVM flags Spark needs on Java 17), bound to 127.0.0.1, with
``engine/spark`` of the checkout as their configuration folder when it exists (quiet logs).
The cluster is healthy when the master's status page lists both workers as ALIVE.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from samza_nb.config import environment
from samza_nb.services._base import Service, repo_engine_dir
from samza_nb.services._java import java_binary, pyspark_home
from samza_nb.services._process import ProcessRecord, free_ports, port_open, spawn, wait_healthy
from samza_nb.spark_classes import empty_conf_folder, existing_archive, log4j_option

__all__ = ["SparkStandalone", "alive_worker_hosts", "alive_workers", "spark_conf_dir"]

WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"


def alive_workers(webui_port: int, timeout: float = 2.0, host: str = "127.0.0.1") -> int:
    """How many workers the master's web UI at ``host:webui_port`` reports as ALIVE.

    0 while the master is not ALIVE, and while its web UI is up but does not serve its status
    as JSON yet (a master just started answers with an empty body for a moment).
    """
    return len(alive_worker_hosts(webui_port, timeout, host))


def alive_worker_hosts(webui_port: int, timeout: float = 2.0, host: str = "127.0.0.1") -> list[str]:
    """The addresses of the workers the master reports as ALIVE (empty while it is not ALIVE)."""
    url = f"http://{host}:{webui_port}/json/"
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body = response.read().decode("utf-8", errors="replace")
    try:
        status = json.loads(body)
    except ValueError:
        return []
    if not isinstance(status, dict) or status.get("status") != "ALIVE":
        return []
    workers = status.get("workers", [])
    return [str(worker.get("host")) for worker in workers if worker.get("state") == "ALIVE"]


def spark_conf_dir() -> Path | None:
    """``$SAMZA_NB_SPARK_CONF_DIR``, else ``engine/spark`` of the checkout, else None."""
    configured = environment("SAMZA_NB_SPARK_CONF_DIR")
    if configured:
        return Path(configured)
    engine = repo_engine_dir()
    return engine / "spark" if engine and (engine / "spark").is_dir() else None


class SparkStandalone(Service):
    """``spark://127.0.0.1:<port>`` with two workers (1 core, 1 GiB each)."""

    name = "spark"
    default = False

    def _data_dirs(self) -> list[Path]:
        return [self.directory / "work"]

    def daemon_environment(self, spark_home: Path, local_ip: str | None = None) -> dict[str, str]:
        """The daemons' environment; ``local_ip`` (default the service's host) is the address
        a daemon binds and advertises."""
        env = dict(os.environ)
        local_ip = local_ip or self.bind_host
        java = java_binary(self.name)
        env.update(
            {
                "SPARK_HOME": str(spark_home),
                "JAVA_HOME": env.get("JAVA_HOME") or str(Path(java).resolve().parents[1]),
                "SPARK_LOCAL_IP": local_ip,
                "SPARK_LOCAL_HOSTNAME": local_ip,
                "SPARK_DAEMON_MEMORY": "256m",
                # Daemons only route work: the serial collector and C1 start fastest on 2 cores.
                "SPARK_DAEMON_JAVA_OPTS": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
                # The REST submission server would take the fixed port 6066: not wanted here.
                "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
                "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON") or sys.executable,
            }
        )
        conf_dir = spark_conf_dir()
        if conf_dir is not None and existing_archive() is not None:
            # Their executors map the drivers' class-data archive, which needs the drivers'
            # class path: the empty conf folder, the log4j2 file given by name (the daemons need
            # nothing else of the folder; the master's one setting is in SPARK_MASTER_OPTS).
            env["SPARK_CONF_DIR"] = str(empty_conf_folder())
            env["SPARK_DAEMON_JAVA_OPTS"] += f" {log4j_option(conf_dir)}"
        elif conf_dir is not None:
            env["SPARK_CONF_DIR"] = str(conf_dir)
        return env

    def _launch(self, timeout: float) -> dict[str, Any]:
        spark_home = pyspark_home(self.name)
        spark_class = str(spark_home / "bin" / "spark-class")
        env = self.daemon_environment(spark_home)
        deadline = time.monotonic() + timeout
        port, webui, *worker_uis = free_ports(2 + WORKERS)
        master_url = f"spark://127.0.0.1:{port}"

        def daemon(role: str, *args: str) -> ProcessRecord:
            argv = [spark_class, *args]
            log_file = self.log_file(role)
            return self._track(spawn(role, argv, log_file=log_file, cwd=self.directory, env=env))

        master = daemon(
            "spark-master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui),
        )  # fmt: skip
        self._wait_ports([master], [port, webui], timeout)
        for index, ui_port in enumerate(worker_uis, start=1):
            work_dir = self.directory / "work" / f"worker-{index}"
            work_dir.mkdir(parents=True, exist_ok=True)
            daemon(
                f"spark-worker-{index}", "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--webui-port", str(ui_port),
                "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
                "--work-dir", str(work_dir), master_url,
            )  # fmt: skip
        wait_healthy(
            self.name,
            self._spawned,
            lambda: alive_workers(webui) >= WORKERS,
            timeout=max(deadline - time.monotonic(), 1.0),
        )
        return {
            "address": f"{master_url} ({WORKERS} workers, UI http://127.0.0.1:{webui})",
            "port": port,
            "webui_port": webui,
            "env": {"SAMZA_NB_SPARK_MASTER_URL": master_url},
        }

    def _healthy(self, state: Mapping[str, Any]) -> bool:
        return port_open("127.0.0.1", int(state["port"])) and (
            alive_workers(int(state["webui_port"])) >= WORKERS
        )
