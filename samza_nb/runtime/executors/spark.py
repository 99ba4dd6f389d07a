"""The one place that starts the Spark samza_nb runs on.

``get_spark_context()`` returns the process's SparkContext, starting it on first use: master
from the config key ``spark.master``, else ``$SAMZA_NB_SPARK_MASTER``, else ``local[*]``; quiet
logs (the log4j2 file of ``engine/spark``, or ``setLogLevel("ERROR")`` when that folder is not
available); no web UI unless asked; Arrow on; Python workers reused; everything bound to
127.0.0.1. A JVM holds one SparkContext, so asking for another master stops the current one
first. Jobs need only the context (their epochs are RDD jobs): a process that runs jobs and
never asks for a DataFrame never builds Spark SQL's session, which costs about 2 s of the
JVM's CPU (1.5 s of wall time) on top of the context's 3.
``get_spark()`` returns the process's SparkSession (for DataFrames), built on that context.

A quiet start: the JVM is launched with its stderr on a pipe that a daemon thread reads line by
line, dropping the JVM's start-up notice "WARNING: Using incubator modules: jdk.incubator.vector"
(Spark adds that module; the JVM announces it on every start) and passing every other line on
to this process's stderr. Without it the notice lands, in red, in whichever notebook cell
started Spark, since ipykernel forwards what child processes write to file descriptor 2.

pyspark is imported only when a session is requested: importing this module stays cheap.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from samza_nb.config import Config, environment
from samza_nb.runtime.executors.interrupts import handlers_deferred
from samza_nb.runtime.executors.masters import DEFAULT_MASTER, running_context
from samza_nb.runtime.executors.other_spark_jobs import wait_for_closing_pools
from samza_nb.spark_classes import driver_launch

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER",
    "SESSION_START_HOOKS",
    "get_spark",
    "get_spark_context",
    "spark_conf_dir",
    "stop_spark",
]

log = logging.getLogger("samza_nb.runtime.executors.spark")

DEFAULT_APP_NAME = "samza_nb"

# Settings every session gets unless the config says otherwise. They mirror
# engine/spark/spark-defaults.conf so that an installed package without the checkout's engine/
# folder behaves the same.
_ESSENTIALS: dict[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # Executors (standalone workers included) must run this interpreter: it has samza_nb.
    "spark.pyspark.python": sys.executable,
    "spark.pyspark.driver.python": sys.executable,
    # Workers fork from a daemon that has the engine imported (runtime/executors/spark_daemon.py).
    "spark.python.daemon.module": "samza_nb.runtime.executors.spark_daemon",
    # The executor talks to its Python workers over Unix domain sockets: over loopback TCP
    # every task stalled ~40 ms waiting for the end of its input (Nagle's algorithm meeting
    # delayed ACKs), doubling a small job's time (bench/scaling.py's empty epoch).
    "spark.python.unix.domain.socket.enabled": "true",
}

#: Lines the JVM writes to stderr at every start that tell a notebook user nothing.
_JVM_NOISE = (b"WARNING: Using incubator modules:",)

_lock = threading.Lock()
_session: SparkSession | None = None
#: Entered (with the master URL) while a new context starts, seconds when a JVM starts first:
#: the notebook layer registers one that shows a status line at once.
SESSION_START_HOOKS: list[Callable[[str], contextlib.AbstractContextManager[object]]] = []


def spark_conf_dir() -> Path | None:
    """``$SAMZA_NB_SPARK_CONF_DIR``, else ``engine/spark`` of the checkout, when it has a log4j2 file."""
    configured = environment("SAMZA_NB_SPARK_CONF_DIR")
    candidate = (
        Path(configured) if configured else Path(__file__).resolve().parents[3] / "engine" / "spark"
    )
    return candidate if (candidate / "log4j2.properties").is_file() else None


def _master(config: Config) -> str:
    # Config.get_str would fall back to the documented default and hide the environment variable.
    if "spark.master" in config:
        return config["spark.master"]
    return environment("SAMZA_NB_SPARK_MASTER") or DEFAULT_MASTER


def _alive(session: SparkSession | None) -> bool:
    return session is not None and getattr(session.sparkContext, "_jsc", None) is not None


def get_spark_context(
    config: Config | Mapping[str, Any] | None = None,
    *,
    app_name: str | None = None,
    ui: bool = False,
) -> SparkContext:
    """The process's SparkContext for ``config``'s master (started on first call, then reused;
    a session's, a notebook's included).

    Other ``spark.*`` keys of ``config`` are passed to Spark when the context starts.
    """
    config = Config.of(config)
    with _lock:
        return _context(config, _master(config), app_name, ui)


def get_spark(
    config: Config | Mapping[str, Any] | None = None,
    *,
    app_name: str | None = None,
    ui: bool = False,
) -> SparkSession:
    """The shared SparkSession for ``config``'s master (created on first call, then reused), on
    the process's SparkContext (:func:`get_spark_context`).

    Other ``spark.*`` keys of ``config`` are passed to Spark when the context starts.
    """
    global _session
    config = Config.of(config)
    master = _master(config)
    with _lock:
        current = _session if _alive(_session) else _active_session()
        if current is not None and current.sparkContext.master == master:
            _session = current
            return current
        context = _context(config, master, app_name, ui)
        from pyspark.sql import SparkSession

        _session = SparkSession(context)
        return _session


def _context(config: Config, master: str, app_name: str | None, ui: bool) -> SparkContext:
    """The live context on ``master``, else a new one (another master's is stopped first)."""
    global _session
    current = running_context()
    if current is not None:
        if current.master == master:
            return current
        log.info(
            "stopping the Spark context on %s to start one on %s (one per JVM)", current.master, master
        )
        current.stop()
        _session = None
    with contextlib.ExitStack() as hooks:
        for hook in SESSION_START_HOOKS:
            hooks.enter_context(hook(master))
        return _start(config, master, app_name, ui)


def _active_session() -> SparkSession | None:
    """A session someone else created in this process (for example a notebook cell)."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    return active if _alive(active) else None


def _start(config: Config, master: str, app_name: str | None, ui: bool) -> SparkContext:
    conf_dir = spark_conf_dir()
    # spark-submit (which pyspark uses to launch the JVM) reads log4j2.properties and
    # spark-defaults.conf from SPARK_CONF_DIR; a folder the user chose is left alone.
    use_conf_dir = conf_dir is not None and "SPARK_CONF_DIR" not in os.environ
    # With this environment's class-data archive the driver reads the same two files of the
    # folder another way (samza_nb/spark_classes.py).
    launch = driver_launch(conf_dir) if conf_dir is not None and use_conf_dir else None
    if use_conf_dir and launch is None:
        os.environ["SPARK_CONF_DIR"] = str(conf_dir)
    # Spark reads SPARK_LOCAL_IP for its block manager and would warn about a loopback hostname.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # SparkContext takes its workers' interpreter from PYSPARK_PYTHON, not from the conf key:
    # without it local workers would run the system python3, which lacks samza_nb's deps.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from pyspark import SparkConf, SparkContext

    name = app_name or config.get("spark.app.name") or config.get("app.name") or DEFAULT_APP_NAME
    settings = dict(_ESSENTIALS)
    host_address = environment("SAMZA_NB_HOST_ADDRESS")
    if host_address:
        # On a simulated cluster host (services/cluster.py) executors on the other hosts reach
        # the driver at the host's own address; 127.0.0.1 would be their own loopback.
        settings["spark.driver.host"] = settings["spark.driver.bindAddress"] = host_address
    settings["spark.ui.enabled"] = "true" if ui else "false"
    settings.update(
        {
            key: value
            for key, value in config.items()
            if key.startswith("spark.") and key not in ("spark.master", "spark.app.name")
        }
    )
    if launch is not None:  # an application's own Java options win
        settings.setdefault("spark.driver.defaultJavaOptions", launch.java_options)
        settings.setdefault("spark.executor.defaultJavaOptions", launch.executor_java_options)
    with _environment(launch.environment if launch is not None else {}):
        _launch_quiet_gateway(master, name, settings)
    conf = SparkConf().setMaster(master).setAppName(name)
    for key, value in settings.items():
        conf.set(key, value)
    with handlers_deferred():  # a job starting Spark keeps Ctrl-C plain meanwhile (interrupts.py)
        context = SparkContext.getOrCreate(conf)
    _reap_the_jvm()
    _remove_socket_at_exit(context)
    if not use_conf_dir:
        context.setLogLevel("ERROR")
    return context


@contextlib.contextmanager
def _environment(variables: Mapping[str, str]) -> Iterator[None]:
    """``variables`` set in this process's environment meanwhile (for spark-submit to read)."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _reap_the_jvm() -> None:
    """Wait for the JVM this process started from a daemon thread, so it is reaped when it ends.

    A Jupyter kernel that shuts down sends SIGTERM to the children in its process group and
    waits while any is left, a zombie included (ipykernel's ``_at_shutdown``: up to half a
    minute), and Jupyter kills it after 5 s. Nobody waited for PySpark's JVM, so every kernel
    that had started Spark was killed at shutdown and restart, and its exit handlers (a
    notebook's temporary folder, the accumulator socket) never ran."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if not isinstance(process, subprocess.Popen) or getattr(process, "_samza_nb_reaped", False):
        return
    process._samza_nb_reaped = True  # type: ignore[attr-defined]
    threading.Thread(target=process.wait, name="samza-nb-jvm-reaper", daemon=True).start()


def _remove_socket_at_exit(context: SparkContext) -> None:
    """Remove the driver's accumulator socket file when this process exits.

    With Unix domain sockets on, PySpark's accumulator server listens on a file in the JVM's
    temporary folder and removes it only in ``SparkContext.stop``; a notebook kernel or script
    that ends without stopping its session would leave one hidden file behind per run.
    """
    server = getattr(context, "_accumulatorServer", None)
    address = getattr(server, "server_address", None)
    if isinstance(address, str):
        atexit.register(_remove_accumulator_socket, address)


def _remove_accumulator_socket(path: str) -> None:
    """At exit: first the closing resident pools' Spark jobs end (bounded), whose tasks
    report to this socket as they finish; removed under them, each task's report failed with
    a Java stack trace on the console."""
    wait_for_closing_pools()
    with contextlib.suppress(OSError):
        os.remove(path)


def _launch_quiet_gateway(master: str, name: str, settings: Mapping[str, str]) -> None:
    """Start the JVM (unless this process has one) with its stderr filtered (module docstring).

    The SparkConf given to spark-submit is the one the builder will use, so JVM-level settings
    (driver memory, extra Java options) take effect as they would without this step.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return  # a JVM runs already (or was started by someone else): nothing to launch
    conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(name)
    for key, value in settings.items():
        conf.set(key, value)
    launched: list[subprocess.Popen[bytes]] = []
    try:
        with _recording_launches(launched):
            gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    except BaseException:
        # Ctrl-C (or a failure) while the JVM starts: end the JVM this call started. Left
        # alone it outlives this process, holding its pipes: it watches its stdin for this
        # process's exit only once its gateway is up.
        for process in launched:
            _end(process)
        raise
    stream = getattr(getattr(gateway, "proc", None), "stderr", None)
    if stream is not None:
        threading.Thread(
            target=_forward_stderr,
            args=(stream, sys.__stderr__),
            name="samza-nb-jvm-stderr",
            daemon=True,
        ).start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


@contextlib.contextmanager
def _recording_launches(launched: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    """Record the processes PySpark's ``launch_gateway`` starts (it keeps them to itself until
    it returns)."""
    from pyspark import java_gateway

    original = java_gateway.Popen

    def recorded(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        process: subprocess.Popen[bytes] = original(*args, **kwargs)
        launched.append(process)
        return process

    java_gateway.Popen = recorded  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        java_gateway.Popen = original  # type: ignore[misc]


def _end(process: subprocess.Popen[bytes]) -> None:
    """Stop a JVM this process started (SIGTERM, then SIGKILL after 5 s)."""
    with contextlib.suppress(OSError):
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _forward_stderr(lines: Iterable[bytes], target: TextIO | None) -> None:
    """Copy the JVM's stderr to ``target`` until the JVM exits, without the start-up noise.

    The pipe is read to its end whatever happens to ``target``: a JVM writing to a full pipe
    would block.
    """
    fileno: int | None
    try:
        fileno = target.fileno() if target is not None else None
    except (OSError, ValueError):
        fileno = None
    for line in lines:
        if fileno is None or line.startswith(_JVM_NOISE):
            continue
        try:
            os.write(fileno, line)
        except OSError:
            fileno = None


def stop_spark() -> None:
    """Stop the process's SparkContext (and the session on it); a no-op when none runs."""
    global _session
    with _lock:
        current = _session if _alive(_session) else _active_session()
        _session = None
        if current is not None:
            current.stop()
        context = running_context()
        if context is not None:
            context.stop()
