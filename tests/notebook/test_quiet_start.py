"""Starting Spark prints nothing into a notebook cell: the JVM's "Using incubator modules"
notice, written to the stderr a kernel forwards to the cell that started Spark, is dropped."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

NOTICE = "WARNING: Using incubator modules"

_PLAIN = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
print(spark.range(3).count())
"""
_SAMZA_NB = """
from samza_nb.runtime.spark import get_spark
spark = get_spark({"spark.master": "local[1]"})
print(spark.range(3).count())
spark.sparkContext._jvm.java.lang.System.err.println("a real JVM error line")
spark.sparkContext._jvm.java.lang.System.err.flush()
import time; time.sleep(0.5)
"""


def _start(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )


@pytest.mark.slow
@pytest.mark.spark
def test_get_spark_drops_the_incubator_notice_and_keeps_other_jvm_stderr() -> None:
    plain = _start(_PLAIN)
    # The JVM really prints it: without the filter the notice reaches stderr (the cell).
    assert NOTICE in plain.stderr, plain.stderr
    quiet = _start(_SAMZA_NB)
    assert quiet.stdout.split() == ["3"]
    assert NOTICE not in quiet.stderr, quiet.stderr
    # Everything else the JVM writes to stderr still arrives.
    assert "a real JVM error line" in quiet.stderr, quiet.stderr
