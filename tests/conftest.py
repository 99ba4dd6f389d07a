"""Suite-wide settings.

- Ordering: with ``--dist loadfile`` each file runs whole on one worker, so the files that take
  longest start first and the short ones fill in around them (engine/run-tests.sh passes
  ``--no-loadscope-reorder`` so xdist keeps this order).
- The suite's Spark JVMs (the tests' own session, processor processes, notebook kernels, the
  standalone cluster's executors) run samza_nb jobs only, so they use the JVM's quick compiler
  and the serial collector (docs/performance.md, "The JVM's JIT compiler"): on two cores the
  optimizing compiler's threads compete with everything else a test starts (notebook 06 under
  papermill: 40 s with these, 56 s without). A Spark folder of the user's (``SPARK_CONF_DIR`` or
  ``SAMZA_NB_SPARK_CONF_DIR``) is left alone.
- CPU by test (engine/suite_cpu.py): each test runs with ``SAMZA_NB_TEST`` naming it, so every
  process it starts carries its name; with ``SAMZA_NB_TEST_LOG`` set, each worker also writes
  when each test started and ended, so the CPU of the worker and of its own Spark JVM can be
  given to the test that was running.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from samza_nb.runtime.executors.spark import spark_conf_dir

#: What the suite's Spark folder adds to engine/spark/spark-defaults.conf.
_SUITE_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def pytest_configure(config: pytest.Config) -> None:
    if "SPARK_CONF_DIR" in os.environ or "SAMZA_NB_SPARK_CONF_DIR" in os.environ:
        return
    checkout = spark_conf_dir()
    if checkout is None:
        return
    suite = Path(tempfile.mkdtemp(prefix="samza-nb-spark-conf-"))
    atexit.register(shutil.rmtree, suite, ignore_errors=True)
    for name in ("log4j2.properties", "spark-defaults.conf"):
        shutil.copy(checkout / name, suite / name)
    with (suite / "spark-defaults.conf").open("a", encoding="utf-8") as defaults:
        defaults.write(
            "\n# The test suite's JVMs run samza_nb jobs only (tests/conftest.py).\n"
            f"spark.driver.extraJavaOptions               {_SUITE_JVM_OPTIONS}\n"
            f"spark.executor.extraJavaOptions             {_SUITE_JVM_OPTIONS}\n"
        )
    os.environ["SAMZA_NB_SPARK_CONF_DIR"] = str(suite)

#: A rough cost per test by its marks, in seconds on this 2-core machine: only the order matters.
_COST = (("slow", 30.0), ("services", 3.0), ("spark", 2.0))
_OTHER = 0.1


def _cost(item: pytest.Item) -> float:
    return next((cost for mark, cost in _COST if item.get_closest_marker(mark)), _OTHER)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    per_file: dict[str, float] = defaultdict(float)
    for item in items:
        per_file[item.nodeid.split("::", 1)[0]] += _cost(item)
    items.sort(key=lambda item: -per_file[item.nodeid.split("::", 1)[0]])  # stable: file order kept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """The test's setup, call and teardown run with ``SAMZA_NB_TEST`` naming it."""
    os.environ["SAMZA_NB_TEST"] = item.nodeid
    started = time.time()
    try:
        return (yield)
    finally:
        log = os.environ.get("SAMZA_NB_TEST_LOG")
        if log:
            row = {"pid": os.getpid(), "test": item.nodeid, "start": started, "end": time.time()}
            with open(log, "a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")
