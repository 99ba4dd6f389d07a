"""The local standalone cluster: a job run on it uses executors on both workers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.services, pytest.mark.slow]

# Run in a subprocess: one JVM holds one SparkContext, and this process shares a local one.
_JOB = """
import json, sys
from samza_nb.runtime.executors.spark import get_spark, stop_spark
session = get_spark({"spark.master": sys.argv[1], "spark.executor.memory": "512m",
                     "spark.scheduler.minRegisteredResourcesRatio": "1.0"})
sc = session.sparkContext
hosts = sc.parallelize(range(8), 8).map(lambda _: __import__("os").getpid()).distinct().count()
executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
print(json.dumps({"total": sc.parallelize(range(1000), 4).sum(), "executors": executors,
                  "python_workers": hosts}))
stop_spark()
"""


def test_a_job_runs_on_two_executors(spark_standalone: str) -> None:
    assert spark_standalone.startswith("spark://127.0.0.1:")
    done = subprocess.run(
        [sys.executable, "-c", _JOB, spark_standalone],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["total"] == sum(range(1000))
    assert result["executors"] == 2
    assert result["python_workers"] >= 2
