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
from samza_nb.job import run
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.runtime.checkpoints import CheckpointStore
from samza_nb.systems import EmbeddedSystem

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_JOB = """
import sys
from samza_nb.examples.page_views import build_app
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.job import run
from samza_nb.runtime.checkpoints import CheckpointStore
from samza_nb.systems import EmbeddedSystem
system = EmbeddedSystem("embedded", path=sys.argv[1])
run(build_app(system, name="crashy"), {"task.max.epoch.messages": "100",
    "spark.master": "local[2]"}, until="end-of-stream", executor=sys.argv[2])
"""


def _committed_epochs(path: Path) -> int:
    """Epochs committed so far by the job in the other process (0 before its first commit)."""
    store_path = path / "jobs" / "crashy-1" / "metadata.sqlite3"
    if not store_path.exists():
        return 0
    store = EmbeddedMetadataStore(store_path)
    try:
        checkpoints = CheckpointStore(store)
        return sum(checkpoints.read(f"Partition {p}").seq for p in range(4))
    finally:
        store.close()


def test_killed_processor_restarts_without_loss_or_double_counting(spark: object, tmp_path: Path) -> None:
    path = tmp_path / "log"
    system = EmbeddedSystem("embedded", path=path)
    events = generate_page_views(200_000, seed=11)
    write_page_views(system, events)
    rng = random.Random(5)
    progress = [0]
    # The first run is killed with its epoch on Spark (the product path: Python workers die with
    # the driver); the later two run epochs in-process, which kills at the same points of the
    # commit protocol without starting another JVM each.
    for executor in ("spark", "local", "local"):
        process = subprocess.Popen(
            [sys.executable, "-c", _JOB, str(path), executor],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Wait until this run has committed an epoch of its own, then kill it at a random point
        # of a later epoch (epochs here take a few milliseconds: the input is sized
        # so that three runs cannot finish it between their first commit and the kill).
        deadline = time.monotonic() + 120
        while _committed_epochs(path) <= progress[-1] and process.poll() is None:
            assert time.monotonic() < deadline, "the job committed nothing in 120 s"
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.6))
        assert process.poll() is None, "the job finished before it could be killed"
        os.killpg(process.pid, signal.SIGKILL)
        assert process.wait(30) == -signal.SIGKILL
        progress.append(_committed_epochs(path))
    assert progress == sorted(set(progress))  # every run committed epochs before it was killed
    from samza_nb.examples.page_views import build_app

    job = run(build_app(system, name="crashy"), {"task.max.epoch.messages": "5000"}, until="end-of-stream")
    assert job.metrics()["streams"]["page-views"]["in"] < len(events)  # the restart had work left
    totals = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert totals == expected_counts(events)
