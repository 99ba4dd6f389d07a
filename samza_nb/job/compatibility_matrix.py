"""The compatibility matrix: every combination of the settings that pick an engine part, and
whether the engine runs it.

The axes are the job coordinator (``job.coordinator.factory``), the metadata store
(``metadata.store.factory``, every name the registry knows), the processing guarantee
(``task.processing.guarantee``), the system of the job's streams, the standby replication
factor (``job.standbytasks.replication.factor``) and the executor (``run(executor=...)``). The
checkpoint home is not a setting of its own: exactly-once keeps checkpoints in the Kafka
checkpoint topic, at-least-once in the metadata store (runtime/task/exactly_once.py's
``open_checkpoint_store``); each cell shows where its checkpoints go.

Each cell's verdict comes from the rules the job applies, not from a copy of them: the cell's
config and a plan of a one-input, one-output application on the cell's system go through
:func:`samza_nb.job.compatibility.check_job`, exactly as ``run`` does before it writes
anything. A cell with a standby replication factor of N runs N processors at N locations (the
embedded coordinator) or one processor per process (ZooKeeper, Azure), as a user would; fewer
locations are refused by the same check (tests/runtime/test_compatibility.py).

``python -m samza_nb.job.compatibility_matrix`` prints the table of docs/configuration.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.job.compatibility import check_job
from samza_nb.job.preparation import initial_processors
from samza_nb.metadata.registry import metadata_store_names
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.plan.graph import SpecGraph, StreamDeclaration
from samza_nb.plan.operators import InputOperatorSpec, OpCode, OutputOperatorSpec
from samza_nb.plan.planner import plan_application
from samza_nb.plan.serdes import JsonSerde
from samza_nb.runtime.task.exactly_once import AT_LEAST_ONCE, EXACTLY_ONCE, exactly_once
from samza_nb.systems.embedded import EmbeddedSystem
from samza_nb.systems.kafka import KafkaSystem

__all__ = [
    "CHECKPOINT_TOPIC_HOME",
    "COORDINATORS",
    "EXECUTORS",
    "GUARANTEES",
    "METADATA_STORE_HOME",
    "REPLICATION_FACTORS",
    "SYSTEMS",
    "Cell",
    "ServiceAddresses",
    "cells",
    "checkpoint_home",
    "matrix_markdown",
    "plan_for",
    "verdict",
]

COORDINATORS = ("embedded", "zookeeper", "azure")
GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE)
SYSTEMS = ("embedded", "kafka")
REPLICATION_FACTORS = (1, 2)
EXECUTORS = ("local", "spark")

METADATA_STORE_HOME = "metadata store"
CHECKPOINT_TOPIC_HOME = "Kafka checkpoint topic"
#: The home of the plans the verdicts judge: they are never run, so nothing is written there.
_NOWHERE = Path("/nonexistent/samza-nb-matrix")


@dataclass(frozen=True)
class ServiceAddresses:
    """Where the services of a cell are: placeholders for the verdicts (no rule depends on an
    address, only on whether one is set), the real servers for a run."""

    zk_connect: str = "127.0.0.1:2181"
    kafka_bootstrap: str = "127.0.0.1:9092"
    azure_connect: str = "UseDevelopmentStorage=true"


@dataclass(frozen=True)
class Cell:
    """One combination of the matrix's axes."""

    coordinator: str
    metadata_store: str
    guarantee: str
    system: str
    replication_factor: int
    executor: str

    @property
    def processors(self) -> int:
        """Processors this process hosts: as many as copies of a task under the embedded
        coordinator (one location each), one in a process of a distributed job."""
        return self.replication_factor if self.coordinator == "embedded" else 1

    def config(self, addresses: ServiceAddresses | None = None) -> dict[str, str]:
        """The keys this cell sets (and the addresses of the services it names)."""
        where = addresses or ServiceAddresses()
        entries = {
            "job.coordinator.factory": self.coordinator,
            "metadata.store.factory": self.metadata_store,
            "task.processing.guarantee": self.guarantee,
            "job.standbytasks.replication.factor": str(self.replication_factor),
        }
        if self.replication_factor > 1 and self.coordinator == "embedded":
            entries["job.container.count"] = str(self.processors)
            entries["processor.locations"] = ",".join(f"host-{i}" for i in range(self.processors))
        if "zookeeper" in (self.coordinator, self.metadata_store):
            entries["job.coordinator.zk.connect"] = where.zk_connect
        if "azure" in (self.coordinator, self.metadata_store):
            entries["azure.storage.connect"] = where.azure_connect
        if self.metadata_store == "kafka":
            entries["job.coordinator.system"] = "kafka"
            entries["systems.kafka.bootstrap.servers"] = where.kafka_bootstrap
        return entries

    def keys(self) -> str:
        """The cell as the settings a user writes, for tables and test ids."""
        return (
            f"{self.coordinator}/{self.metadata_store}/{self.guarantee}/{self.system}/"
            f"rf{self.replication_factor}/{self.executor}"
        )


def cells() -> Iterator[Cell]:
    """Every cell, axis by axis in the order of the table."""
    for values in itertools.product(
        COORDINATORS, metadata_store_names(), GUARANTEES, SYSTEMS, REPLICATION_FACTORS, EXECUTORS
    ):
        yield Cell(*values)


def plan_for(
    cell: Cell, home: Path, addresses: ServiceAddresses | None = None, **extra: str
) -> ExecutionPlan:
    """The plan ``run`` makes of an application copying ``in`` to ``out`` on the cell's system
    (``home``: where its embedded log and job home would be; nothing is written)."""
    where = addresses or ServiceAddresses()
    system: Any = (
        EmbeddedSystem("embedded", path=home / "log")
        if cell.system == "embedded"
        else KafkaSystem("kafka", where.kafka_bootstrap)
    )
    serde = JsonSerde()
    source = InputOperatorSpec(
        op_id="matrix-1-input-in",
        opcode=OpCode.INPUT,
        stream_id="in",
        system_name=system.name,
        serde=serde,
    )
    sink = OutputOperatorSpec(
        op_id="matrix-1-send_to-0",
        opcode=OpCode.SEND_TO,
        stream_id="out",
        system_name=system.name,
        serde=serde,
    )
    source.register_next(sink)
    config = Config(
        {"app.name": "matrix", "job.home": str(home / "home"), **cell.config(where), **extra}
    )
    graph = SpecGraph(
        app_name="matrix",
        job_id="1",
        config=config,
        inputs={"in": StreamDeclaration("in", system, 2, serde)},
        outputs={"out": StreamDeclaration("out", system, 2, serde)},
        tables={},
        operators=[source, sink],
    )
    return plan_application(graph, None)


def verdict(cell: Cell) -> str | None:
    """None when the engine runs ``cell``, else the one-line message it is refused with."""
    try:
        plan = plan_for(cell, _NOWHERE)
        # The processors ``run`` would host, as the job computes them.
        hosted = initial_processors(plan.config, None, single=cell.coordinator != "embedded")
        check_job(plan, cell.executor, hosted)
    except ConfigError as refused:
        return str(refused)
    return None


def checkpoint_home(cell: Cell) -> str:
    """Where the cell's checkpoints are committed (the rule of ``open_checkpoint_store``)."""
    plan = plan_for(cell, _NOWHERE)
    return CHECKPOINT_TOPIC_HOME if exactly_once(plan) else METADATA_STORE_HOME


def matrix_markdown() -> str:
    """The matrix as the Markdown of docs/configuration.md: one row per coordinator, metadata
    store, guarantee and system, one column per standby replication factor and executor, and
    the refusals, numbered, below it."""
    columns = list(itertools.product(REPLICATION_FACTORS, EXECUTORS))
    lines = [
        "| coordinator | metadata store | guarantee | checkpoint home | system | "
        + " | ".join(f"replication {rf}, {executor}" for rf, executor in columns)
        + " |",
        "|---|---|---|---|---|" + "---|" * len(columns),
    ]
    messages: dict[str, int] = {}
    for coordinator, store, guarantee, system in itertools.product(
        COORDINATORS, metadata_store_names(), GUARANTEES, SYSTEMS
    ):
        marks = []
        for rf, executor in columns:
            said = verdict(Cell(coordinator, store, guarantee, system, rf, executor))
            marks.append(
                "works"
                if said is None
                else f"refused ({messages.setdefault(said, len(messages) + 1)})"
            )
        home = checkpoint_home(Cell(coordinator, store, guarantee, system, 1, "local"))
        lines.append(
            f"| {coordinator} | {store} | {guarantee} | {home} | {system} | "
            + " | ".join(marks)
            + " |"
        )
    lines.append("")
    lines += [f"{number}. {message}" for message, number in messages.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(matrix_markdown(), end="")
