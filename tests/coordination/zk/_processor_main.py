"""A processor process for the SIGKILL tests: one ZkJobCoordinator whose listener prints.

Usage: python _processor_main.py '<json: {"config": {...}, "pid": ..., "location": ...,
"partitions": n}>'. Exits by itself after 120 s at the latest.
"""

from __future__ import annotations

import json
import sys
import time

from samza_nb.config import Config
from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
from samza_nb.coordination.zk import ZkJobCoordinator
from samza_nb.model import JobModel, SystemStreamPartition


class PrintingListener:
    def on_job_model_expired(self) -> None:
        print("expired", flush=True)

    def on_new_job_model(self, processor_id: str, job_model: JobModel) -> None:
        container = job_model.containers.get(processor_id)
        print("new", sorted(container.tasks) if container else [], flush=True)

    def on_coordinator_stop(self) -> None:
        print("stop", flush=True)

    def on_coordinator_failure(self, error: BaseException) -> None:
        print("failure", error, flush=True)


def main() -> None:
    spec = json.loads(sys.argv[1])
    config = Config(spec["config"])
    ssps = frozenset(SystemStreamPartition("embedded", "in", p) for p in range(spec["partitions"]))
    coordinator = ZkJobCoordinator(JobModelCalculator(JobInputs(ssps, config=config)), config)
    coordinator.attach(spec["pid"], spec["location"], PrintingListener())
    coordinator.start()
    print("started", flush=True)
    time.sleep(120)
    coordinator.stop()


if __name__ == "__main__":
    main()
