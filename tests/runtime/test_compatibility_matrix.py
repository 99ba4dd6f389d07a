"""The compatibility matrix (issue #39): every refused cell is refused in one line naming its
keys, before the job writes anything; working cells run as small real jobs on the real services
(ZooKeeper, Azurite, the Kafka broker) with exact counts; docs/configuration.md shows the
matrix the module computes.

The working cells are 84 (samza_nb.job.compatibility_matrix): the 21 working combinations of
coordinator, metadata store, guarantee and system (the rows of the matrix's table), each in its
four columns (standby replication factor 1 or 2, executor local or spark). :data:`RUNS` runs
every one of them as a small job.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import ConfigError
from samza_nb.job import run
from samza_nb.job.compatibility_matrix import (
    CHECKPOINT_TOPIC_HOME,
    Cell,
    ServiceAddresses,
    cells,
    checkpoint_home,
    matrix_markdown,
    verdict,
)
from samza_nb.metadata.registry import metadata_store_names
from samza_nb.model import TaskMode
from samza_nb.runtime.task.exactly_once import TopicCheckpointStore
from samza_nb.systems import EmbeddedSystem, KafkaSystem
from samza_nb.testing import delete_azure_job

ROOT = Path(__file__).resolve().parents[2]
EVENTS = 24
REFUSED = [cell for cell in cells() if verdict(cell) is not None]
WORKING = [cell for cell in cells() if verdict(cell) is None]

#: Every working cell runs. A distributed job with standbys has two processes (here two Jobs)
#: that must both join before the input comes: its input is written once they have.
RUNS = WORKING

#: Shortened protocol timings of a distributed coordinator (Azurite's shortest lease: 15 s).
_DISTRIBUTED = {
    "job.debounce.time.ms": "300",
    # Long enough that a process starved by a loaded machine keeps its session: the cells test
    # combinations, not failover (a session lost mid-epoch repeats the rebalance and, under
    # exactly-once, aborts the epoch's transaction: one CI run stalled a cell at epoch 3 so).
    "job.coordinator.zk.session.timeout.ms": "10000",
    "job.coordinator.azure.heartbeat.interval.ms": "500",
    "job.coordinator.azure.liveness.timeout.ms": "3000",
    "job.coordinator.azure.leader.check.interval.ms": "500",
    "job.coordinator.azure.membership.check.interval.ms": "300",
    "job.coordinator.azure.barrier.check.interval.ms": "200",
    "job.coordinator.azure.barrier.timeout.ms": "2500",
    "job.coordinator.azure.upgrade.check.interval.ms": "200",
    "job.coordinator.azure.lease.duration.ms": "15000",
    "job.coordinator.azure.lease.renew.interval.ms": "3000",
}


# -- the matrix itself -----------------------------------------------------------------------------


def test_every_axis_value_is_in_the_matrix_and_every_working_cell_runs() -> None:
    assert len(REFUSED) + len(WORKING) == 3 * len(metadata_store_names()) * 2 * 2 * 2 * 2
    assert RUNS == WORKING and len(WORKING) == 84
    for coordinator in ("embedded", "zookeeper", "azure"):
        mine = [r for r in RUNS if r.coordinator == coordinator]
        assert {r.system for r in mine} == {"embedded", "kafka"}
        assert {r.replication_factor for r in mine} == {1, 2}
        assert {r.executor for r in mine} == {"local", "spark"}


def test_the_docs_show_the_matrix_the_module_computes() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    found = re.search(
        r"<!-- compatibility-matrix:begin -->\n(.*?)<!-- compatibility-matrix:end -->", doc, re.S
    )
    assert found, "docs/configuration.md has no compatibility-matrix markers"
    assert found.group(1) == matrix_markdown(), (
        "docs/configuration.md's matrix differs from the module: regenerate it with "
        "`python -m samza_nb.job.compatibility_matrix`"
    )


@pytest.mark.parametrize("cell", REFUSED, ids=Cell.keys)
def test_a_refused_cell_is_refused_in_one_line_naming_its_keys(cell: Cell) -> None:
    message = verdict(cell)
    assert message is not None and "\n" not in message
    named = [
        f"{key}={value}" for key, value in cell.config().items() if f"{key}={value}" in message
    ]
    assert named, f"names none of the cell's settings: {message}"
    assert re.search(r"\b(set|use) [a-z.]+=[a-z-]+", message), (
        f"names no supported setting: {message}"
    )


def test_run_refuses_each_kind_of_refused_cell_before_writing_anything(tmp_path: Path) -> None:
    by_message: dict[str, Cell] = {}
    for cell in REFUSED:
        by_message.setdefault(str(verdict(cell)), cell)
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("in", 2)
    system.create_stream("out", 2)
    for number, (message, cell) in enumerate(sorted(by_message.items())):
        home = tmp_path / f"home-{number}"
        config = {**cell.config(), "job.home": str(home)}
        with pytest.raises(ConfigError) as refused:
            run(_copy(system, f"refused-{number}"), config, executor=cell.executor, processors=None)
        assert str(refused.value) == message
        assert not home.exists()


def test_checkpoints_live_in_the_topic_exactly_when_the_guarantee_is_exactly_once() -> None:
    for cell in WORKING:
        assert (checkpoint_home(cell) == CHECKPOINT_TOPIC_HOME) == (
            cell.guarantee == "exactly-once"
        )


# -- the working cells, run ------------------------------------------------------------------------


@pytest.fixture
def addresses(
    zk_connect: str, kafka_bootstrap: str, azure_connection_string: str
) -> ServiceAddresses:
    return ServiceAddresses(zk_connect, kafka_bootstrap, azure_connection_string)


@pytest.fixture
def app_name(kafka_topic_prefix: str, azure_connection_string: str) -> Iterator[str]:
    """The job's name: its checkpoint topic and coordinator stream go with the test's topics,
    its Azure containers and table are deleted after."""
    name = f"{kafka_topic_prefix}job"
    yield name
    delete_azure_job(name, azure_connection_string)


@pytest.mark.services
@pytest.mark.parametrize("cell", RUNS, ids=Cell.keys)
def test_a_working_cell_runs_a_small_job_and_copies_every_event_once(
    cell: Cell,
    tmp_path: Path,
    addresses: ServiceAddresses,
    app_name: str,
    kafka_topic_prefix: str,
    request: Any,
) -> None:
    if cell.executor == "spark":
        request.getfixturevalue("spark")  # the shared session, which the Spark executor takes
    system: Any = (
        EmbeddedSystem("embedded", path=tmp_path / "log")
        if cell.system == "embedded"
        else KafkaSystem("kafka", addresses.kafka_bootstrap)
    )
    source, sink = (f"{kafka_topic_prefix}in", f"{kafka_topic_prefix}out")
    system.create_stream(source, 2)
    system.create_stream(sink, 2)
    events = [{"i": i} for i in range(EVENTS)]
    embedded = isinstance(system, EmbeddedSystem)
    # Processes of a job with standbys join before the input comes. A Kafka input has no end:
    # a Kafka job runs until its output is complete (on a loaded machine an exactly-once cell
    # once stopped short: Tansu's last stable offset stuck behind a transaction hid the rest
    # from read_committed readers; samza_nb reads uncommitted on Tansu now, docs/kafka.md).
    joins_first = cell.coordinator != "embedded" and cell.replication_factor > 1
    if not embedded and not joins_first:
        system.write(source, events, key_fn=lambda event: str(event["i"]))
    until = "end-of-stream" if embedded else "forever"
    options: dict[str, Any] = {"executor": cell.executor, "until": until, "background": True}
    entries = {**cell.config(addresses), "app.name": app_name, "task.max.epoch.messages": "5"}
    if cell.coordinator == "embedded":
        configs = [{**entries, "job.home": str(tmp_path / "home")}]
    else:  # one processor per process, here a Job each, at locations of their own
        configs = [
            {
                **entries,
                **_DISTRIBUTED,
                "processor.id": pid,
                "processor.locations": f"host-{pid}",
                "job.home": str(tmp_path / pid),
            }
            for pid in (f"p{i}" for i in range(cell.replication_factor))
        ]
    jobs = [run(_copy(system, app_name, source, sink), config, **options) for config in configs]
    try:
        standbys = _standbys_seen(jobs) if cell.replication_factor > 1 else 0
        if embedded:  # every process has joined: the events come, then the end of the stream
            system.write(source, events, key_fn=lambda event: str(event["i"]))
            system.end_stream(source)
        if not embedded:
            if joins_first:
                system.write(source, events, key_fn=lambda event: str(event["i"]))
            _wait_for_output(jobs, sink, EVENTS)
        else:
            for job in jobs:
                assert job.wait(timeout=120).state == "finished", job.status().error
    finally:
        for job in jobs:
            job.stop()
    values = sorted(row["i"] for row in jobs[0].collect(sink)["value"])
    assert values == list(range(EVENTS))
    home = type(jobs[0].checkpoints)
    assert (home is TopicCheckpointStore) == (cell.guarantee == "exactly-once"), home
    if cell.replication_factor > 1:
        assert standbys == 2, "each of the 2 tasks had a hot standby"


def _wait_for_output(jobs: list[Any], sink: str, count: int, timeout: float = 120.0) -> None:
    """Until ``sink`` holds ``count`` messages (jobs that run until stopped)."""
    deadline = time.monotonic() + timeout
    while len(jobs[0].collect(sink)) < count:
        for job in jobs:
            assert not job.status().done, job.status().error
        assert time.monotonic() < deadline, f"{sink} did not get {count} messages in {timeout:g} s"
        time.sleep(0.2)


def _standbys_seen(jobs: list[Any]) -> int:
    """The standby tasks of the first job model that has them (a distributed job's processes
    join one at a time), within a bounded wait; 0 if none came."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for job in jobs:
            model = job.job_model
            found = sum(
                task.mode is TaskMode.STANDBY
                for c in model.containers.values()
                for task in c.tasks.values()
            )
            if found:
                return found
        time.sleep(0.05)
    return 0


def _copy(system: Any, name: str, source: str = "in", sink: str = "out") -> StreamApplication:
    app = StreamApplication(name)
    app.input(system.input(source, serde="json")).send_to(
        app.output(system.output(sink, serde="json"))
    )
    return app
