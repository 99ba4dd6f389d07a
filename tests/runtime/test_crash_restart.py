"""Crash and restart: killing the processor process at random points of an epoch loses no
output and never double-counts window state."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samza_nb.examples.page_views import expected_counts, generate_page_views, write_page_views
from samza_nb.runtime import run
from samza_nb.systems import EmbeddedSystem

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_JOB = """
import sys
from samza_nb.examples.page_views import build_app
from samza_nb.runtime import run
from samza_nb.systems import EmbeddedSystem
system = EmbeddedSystem("embedded", path=sys.argv[1])
run(build_app(system, name="crashy"), {"task.max.epoch.messages": "150",
    "spark.master": "local[2]"}, until="end-of-stream")
"""


def test_killed_processor_restarts_without_loss_or_double_counting(spark: object, tmp_path: Path) -> None:
    path = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=path)
    events = generate_page_views(4_000, seed=11)
    write_page_views(system, events)
    rng = random.Random(5)
    for _ in range(3):
        process = subprocess.Popen(
            [sys.executable, "-c", _JOB, str(path)],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(6.0, 11.0))
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
    from samza_nb.examples.page_views import build_app

    job = run(build_app(system, name="crashy"), {"task.max.epoch.messages": "150"}, until="end-of-stream")
    totals = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert totals == expected_counts(events)
