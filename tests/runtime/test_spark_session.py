"""The shared SparkSession built by samza_nb.runtime.executors.spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from samza_nb.config import Config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_a_tiny_rdd_job_runs(spark: SparkSession) -> None:
    squares = spark.sparkContext.parallelize(range(100), 4).map(lambda x: x * x)
    assert squares.sum() == sum(x * x for x in range(100))
    assert squares.getNumPartitions() == 4


def test_the_session_is_shared_and_configured(spark: SparkSession) -> None:
    from samza_nb.runtime.executors.spark import get_spark

    assert get_spark(Config({"spark.master": "local[2]"})) is spark
    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.master == "local[2]"
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert conf.get("spark.python.worker.reuse") == "true"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.python.daemon.module") == "samza_nb.runtime.executors.spark_daemon"
    assert conf.get("spark.python.unix.domain.socket.enabled") == "true"


def test_python_workers_talk_to_the_executor_over_unix_sockets(spark: SparkSession) -> None:
    def over_unix_socket(_: int) -> str:
        import os

        return os.environ.get("PYTHON_UNIX_DOMAIN_ENABLED", "").lower()

    assert spark.sparkContext.parallelize(range(2), 2).map(over_unix_socket).collect() == ["true", "true"]


_SESSION_LEFT_RUNNING = """
import os
from samza_nb.runtime.executors.spark import get_spark

context = get_spark({"spark.master": "local[1]"}).sparkContext
assert context.parallelize(range(3), 1).sum() == 3
print(context._accumulatorServer.server_address, flush=True)
# The process ends here without stopping its session.
"""


def test_a_process_that_never_stops_its_session_leaves_no_socket_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SESSION_LEFT_RUNNING],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "SAMZA_NB_SPARK_MASTER": "local[1]"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    socket_file = Path(done.stdout.strip().splitlines()[-1])
    assert socket_file.name.endswith(".sock")
    assert not socket_file.exists()


def test_python_workers_fork_with_the_engine_imported(spark: SparkSession) -> None:
    def engine_imported(_: int) -> bool:
        import sys

        return "samza_nb.runtime.task.task" in sys.modules

    # A fresh worker: the plain function imports nothing of samza_nb itself.
    assert spark.sparkContext.parallelize(range(2), 2).map(engine_imported).collect() == [True, True]


def test_arrow_round_trip(spark: SparkSession) -> None:
    import pandas as pd

    frame = pd.DataFrame({"page": ["a", "b", "a"], "views": [1, 2, 3]})
    result = spark.createDataFrame(frame).toPandas()
    assert result.to_dict("list") == {"page": ["a", "b", "a"], "views": [1, 2, 3]}


def test_master_comes_from_config_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from samza_nb.runtime.executors import spark as runtime_spark

    monkeypatch.setenv("SAMZA_NB_SPARK_MASTER", "local[1]")
    assert runtime_spark._master(Config({})) == "local[1]"
    assert runtime_spark._master(Config({"spark.master": "local[2]"})) == "local[2]"
    monkeypatch.delenv("SAMZA_NB_SPARK_MASTER")
    assert runtime_spark._master(Config({})) == runtime_spark.DEFAULT_MASTER == "local[*]"


_JOB_THEN_SESSION = """
import sys
from pyspark.sql import SparkSession
from samza_nb.examples.page_views import build_app, generate_page_views, write_page_views
from samza_nb.job import run
from samza_nb.runtime.executors.spark import get_spark, get_spark_context
from samza_nb.systems import EmbeddedSystem

home = sys.argv[1]
system = EmbeddedSystem("embedded", path=home + "/log")
write_page_views(system, generate_page_views(500, seed=3))
job = run(build_app(system), {"job.home": home + "/job", "spark.master": "local[1]"})
print("job:", job.status().state, "epochs on spark:", job._executor.epochs_on_spark > 0)
print("sql session after the job:", SparkSession._instantiatedSession is not None)
context = get_spark_context({"spark.master": "local[1]"})
spark = get_spark({"spark.master": "local[1]"})
print("session on the job's context:", spark.sparkContext is context is job._executor.context())
print("rows:", spark.range(3).count())
"""


def test_a_job_starts_a_spark_context_only_and_a_session_asked_later_shares_it(tmp_path: Path) -> None:
    # Spark SQL's session costs about 2 s of the JVM's CPU at start (spark.py): a process that
    # only runs jobs never builds it; one that asks for DataFrames later gets it on the context.
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    done = subprocess.run(
        [sys.executable, "-c", _JOB_THEN_SESSION, str(tmp_path)], capture_output=True, text=True,
        timeout=180, env=env, cwd=tmp_path, check=False,
    )
    assert done.stdout.splitlines() == [
        "job: finished epochs on spark: True",
        "sql session after the job: False",
        "session on the job's context: True",
        "rows: 3",
    ], done.stdout + done.stderr


_INTERRUPTED_START = """
import os, signal, threading
from pyspark import java_gateway
from samza_nb.runtime.executors.spark import get_spark

launch = java_gateway.Popen

def launched(*args, **kwargs):
    process = launch(*args, **kwargs)
    print("jvm", process.pid, flush=True)
    # Ctrl-C while the JVM starts (a fresh kernel takes seconds there).
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    return process

java_gateway.Popen = launched
try:
    get_spark()
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_while_the_jvm_starts_leaves_no_jvm_behind(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_START], capture_output=True, text=True, timeout=60,
        env=env, cwd=tmp_path, check=False,
    )
    lines = done.stdout.splitlines()
    assert "interrupted" in lines, done.stdout + done.stderr
    pid = int(next(line.split()[1] for line in lines if line.startswith("jvm ")))
    # The JVM was ended before the interrupt reached the caller: it is gone now.
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


_INTERRUPTED_WAIT = """
import os, signal, sys, threading, time
from samza_nb.examples.page_views import build_app, generate_page_views, write_page_views
from samza_nb.job import run
from samza_nb.runtime.executors.spark import get_spark
from samza_nb.systems import EmbeddedSystem

home = sys.argv[1]
system = EmbeddedSystem("embedded", path=home + "/log")
write_page_views(system, generate_page_views(2_000, seed=3), end=False)
spark = get_spark()
outcome = []

def other_query():  # a notebook's own Spark job, running while the samza job runs
    try:
        outcome.append(spark.sparkContext.parallelize(range(2), 2).map(lambda x: time.sleep(4) or x).sum())
    except Exception as error:  # cancelled
        outcome.append(type(error).__name__)

threading.Thread(target=other_query).start()
job = run(build_app(system), {"job.home": home + "/job"}, until="forever", background=True)
while job.epoch < 2:
    time.sleep(0.05)
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    job.wait()
except KeyboardInterrupt:
    job.stop()
    print("interrupted", flush=True)
while not outcome:
    time.sleep(0.1)
print("other query:", outcome[0], flush=True)
"""


def test_ctrl_c_while_waiting_for_a_job_stops_it_and_no_other_spark_job_of_the_session(tmp_path: Path) -> None:
    # PySpark's SIGINT handler cancels every Spark job of the session: while a job's caller
    # waits, Ctrl-C only raises KeyboardInterrupt there (runtime/executors/interrupts.py).
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_WAIT, str(tmp_path)], capture_output=True, text=True,
        timeout=120, env=env, cwd=tmp_path, check=False,
    )
    assert done.stdout.splitlines() == ["interrupted", "other query: 1"], done.stdout + done.stderr


def test_plain_interrupts_leave_an_ignored_sigint_ignored() -> None:
    import signal

    from samza_nb.runtime.executors.interrupts import plain_interrupts

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a job started with `&` by a script
    try:
        with plain_interrupts():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        with plain_interrupts():
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, previous)


_INTERRUPTED_JOB_START = """
import os, signal, sys, threading
from pyspark import SparkContext, java_gateway
from samza_nb.errors import JobInterruptedError
from samza_nb.examples.page_views import build_app, generate_page_views, write_page_views
from samza_nb.job import run
from samza_nb.systems import EmbeddedSystem

home, point = sys.argv[1], sys.argv[2]
system = EmbeddedSystem("embedded", path=home + "/log")
write_page_views(system, generate_page_views(2_000, seed=3))

def ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)

def interrupting(original, *, from_a_thread=False):
    # Ctrl-C once the start reaches this point: in this thread (it raises on the next
    # bytecode), or from another while this one goes on into the call (a JVM call, mostly).
    def reached(*args, **kwargs):
        if from_a_thread:
            threading.Thread(target=ctrl_c).start()
        else:
            ctrl_c()
        return original(*args, **kwargs)
    return reached

if point == "jvm-launched":  # spark-submit started, its gateway not up yet
    java_gateway.Popen = interrupting(java_gateway.Popen)
elif point == "context-made":  # the gateway is up; the SparkContext is being made
    SparkContext._do_init = interrupting(SparkContext._do_init)
elif point == "in-jvm-call":  # while the JVM makes its JavaSparkContext
    SparkContext._initialize_context = interrupting(SparkContext._initialize_context, from_a_thread=True)
else:  # "session-made": the session is up, the job's processors not started yet
    from contextlib import contextmanager
    from samza_nb.runtime.executors.spark import SESSION_START_HOOKS

    @contextmanager
    def then_ctrl_c(master):
        yield
        ctrl_c()

    SESSION_START_HOOKS.append(then_ctrl_c)
try:
    run(build_app(system), {"job.home": home + "/job"})
    print("not interrupted", flush=True)
except JobInterruptedError as error:
    print("interrupted:", error.job.status().state, flush=True)
made = SparkContext._active_spark_context is not None
handler = signal.getsignal(signal.SIGINT)
print("handler after:", getattr(handler, "__module__", handler), "(context made)" if made else "(no context)", flush=True)
"""


@pytest.mark.parametrize(
    ("point", "after"),
    [
        ("jvm-launched", "_signal (no context)"),
        ("context-made", "_signal (no context)"),
        ("in-jvm-call", "_signal (no context)"),
        ("session-made", "pyspark.core.context (context made)"),
    ],
)
def test_ctrl_c_while_a_job_starts_spark_is_one_error_and_pysparks_handler_comes_after(
    tmp_path: Path, point: str, after: str
) -> None:
    # The interrupt lands at a named point of Spark's start (not after a delay, which a slow
    # machine may pass before the job starts Spark, or a fast one after it): a plain
    # KeyboardInterrupt (no py4j call from PySpark's handler, no py4j traceback), the job
    # stopped, and PySpark's handler in place once the job's start is over if its context
    # was made meanwhile, else the handler from before the job (PySpark's __init__ stops a
    # context that an interrupt cut short).
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_JOB_START, str(tmp_path), point], capture_output=True,
        text=True, timeout=180, env=env, cwd=tmp_path, check=False,
    )
    lines = done.stdout.splitlines()
    assert lines[:1] == ["interrupted: stopped"], done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "py4j" not in done.stderr, done.stderr
    assert lines[-1] == f"handler after: {after}", done.stdout


def test_the_checkouts_spark_defaults_agree_with_the_settings_get_spark_gives_every_session() -> None:
    # spark-submit reads engine/spark/spark-defaults.conf (SPARK_CONF_DIR) for any session of
    # the process, a plain PySpark one included: a module it names must exist.
    import importlib.util

    from samza_nb.runtime.executors import spark as spark_module

    folder = spark_module.spark_conf_dir()
    assert folder is not None
    defaults = {}
    for line in (folder / "spark-defaults.conf").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split(None, 1)
            defaults[key] = value.strip()
    essentials = spark_module._ESSENTIALS
    shared = {key for key in defaults if key in essentials}
    assert "spark.python.daemon.module" in shared
    assert {key: defaults[key] for key in shared} == {key: essentials[key] for key in shared}
    assert importlib.util.find_spec(defaults["spark.python.daemon.module"]) is not None
