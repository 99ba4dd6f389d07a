"""The planner: a :class:`~samza_nb.plan.graph.SpecGraph` becomes an :class:`ExecutionPlan`.

It follows Samza's ExecutionPlanner (SAMZA.md §11.3–11.4):

1. validate the mode (BATCH with host affinity is refused);
2. classify streams: declared inputs, outputs, side inputs of tables, and the intermediate
   streams of partition_by/broadcast (stream id = op id);
3. partition counts of inputs, outputs and side inputs come from their descriptors, or from
   the system when a descriptor gives none; broadcast intermediate streams have 1 partition;
4. group the streams that reach each join without crossing a shuffle (send_to(table) counts as
   an edge to every join_table on that table, whose side inputs join the group too);
5. intermediate streams in a join group take the count of a known stream of the group,
   repeated to a fixpoint;
6. the remaining intermediate streams take ``job.intermediate.stream.partitions``, else
   max(input counts, output counts), capped at 256 in BATCH mode;
7. every join group must end with one partition count (steps 4, 5 and 7:
   :mod:`~samza_nb.plan.join_partitions`).

It then splits the operators into stages (connected by operator edges, separated by shuffles:
:mod:`~samza_nb.plan.stages`),
computes ``task.window.ms`` (GCD of window trigger durations and join TTLs) and writes the
generated intermediate-stream configs.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.errors import ConfigError, PlanError
from samza_nb.plan.combining import combine_shuffles
from samza_nb.plan.execution_plan import ExecutionPlan, Stage, StreamInfo
from samza_nb.plan.graph import SpecGraph, StreamDeclaration
from samza_nb.plan.join_partitions import (
    check_co_partitioned,
    infer_join_partitions,
    join_groups,
    table_joins,
)
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    InputOperatorSpec,
    JoinOperatorSpec,
    OpCode,
    OperatorSpec,
    PartitionByOperatorSpec,
    StreamSystemLike,
    WindowOperatorSpec,
    declared_at,
)
from samza_nb.plan.serdes import KVSerde, Serde
from samza_nb.plan.stages import SHUFFLES, intermediate_producers, split_stages
from samza_nb.plan.store_names import check_store_names, operator_store_names
from samza_nb.plan.stream_names import changelog_stream_id, check_stream_name_lengths
from samza_nb.plan.unused import PlanWarning, warn_unused

__all__ = [
    "MAX_INFERRED_PARTITIONS",
    "ExecutionPlan",
    "PlanWarning",
    "Stage",
    "StreamInfo",
    "plan_application",
]

MAX_INFERRED_PARTITIONS = 256
"""Cap on inferred intermediate partition counts in BATCH mode (Samza's value)."""

_INT_MAX = 2147483647



def plan_application(
    graph: SpecGraph, config: Config | Mapping[str, Any] | None = None
) -> ExecutionPlan:
    """Plan ``graph``; ``config`` entries override the application's config for this plan."""
    return _Planner(graph, config).plan()


class _Planner:
    def __init__(self, graph: SpecGraph, overrides: Config | Mapping[str, Any] | None):
        self.graph = graph
        user = graph.config
        if overrides:
            user = user.with_overrides(dict(overrides))
        self.user_config = user
        self.prefix = f"{graph.app_name}-{graph.job_id}"
        mode = (user.get_str("app.mode") or "STREAM").upper()
        if mode not in ("STREAM", "BATCH"):
            msg = f"config app.mode must be STREAM or BATCH, got {user.get_str('app.mode')!r}"
            raise ConfigError(msg)
        self.batch = mode == "BATCH"

    # -- main ------------------------------------------------------------------------------
    def plan(self) -> ExecutionPlan:
        graph = self.graph
        if self.batch and self.user_config.get_bool("job.host-affinity.enabled"):
            msg = (
                f"app {graph.app_name!r}: host affinity is not supported in BATCH mode; "
                "set job.host-affinity.enabled=false or app.mode=STREAM"
            )
            raise PlanError(msg)

        operators = _snapshot(graph.operators)
        by_id = {spec.op_id: spec for spec in operators}
        input_ops: dict[str, InputOperatorSpec] = {}
        shuffles: dict[str, PartitionByOperatorSpec | BroadcastOperatorSpec] = {}
        for spec in operators:
            if isinstance(spec, InputOperatorSpec):
                input_ops[spec.stream_id] = spec
            elif isinstance(spec, SHUFFLES):
                shuffles[spec.stream_id] = spec

        warn_unused(graph, operators)
        check_store_names(operators, set(graph.tables))
        counts = self._declared_counts()
        intermediates = list(shuffles)
        for stream_id, shuffle in shuffles.items():
            if isinstance(shuffle, BroadcastOperatorSpec):
                counts[stream_id] = 1

        side_inputs = {
            table_id: [side.stream_id for side in decl.side_inputs]
            for table_id, decl in graph.tables.items()
        }
        join_streams = join_groups(operators, input_ops, table_joins(operators), side_inputs)
        infer_join_partitions(join_streams, counts, set(intermediates))
        self._infer_remaining(intermediates, counts, shuffles)
        check_co_partitioned(join_streams, counts, by_id)

        stages, stage_of = split_stages(operators)
        producers = intermediate_producers(input_ops, shuffles)
        window_ms = _window_ms(operators)
        systems = self._systems()
        default_system = self._default_system(systems, shuffles)
        streams = self._stream_infos(counts, shuffles, input_ops, systems, default_system)
        if self.user_config.get_bool("job.shuffle.combine.enabled", True):
            combine_shuffles(shuffles, input_ops, streams)
        store_names = sorted({*graph.tables, *(n for spec in operators for n in operator_store_names(spec))})
        check_stream_name_lengths(
            graph.app_name,
            {
                sid: (info.physical_name or sid, info.system)
                for sid, info in streams.items()
                if info.kind == "intermediate"
            },
            [(store, changelog_stream_id(graph.app_name, graph.job_id, store)) for store in store_names],
            default_system,
        )
        config = self._effective_config(streams, shuffles, default_system, window_ms)
        if "task.window.ms" in config:
            window_ms = config.get_int("task.window.ms")
        side_input_ops = self._side_input_ops()
        all_input_ops = {**input_ops, **side_input_ops}
        side_input_tables: dict[str, tuple[str, ...]] = {}
        for table_id, decl in graph.tables.items():
            for side in decl.side_inputs:
                side_input_tables[side.stream_id] = (
                    *side_input_tables.get(side.stream_id, ()),
                    table_id,
                )

        return ExecutionPlan(
            app_name=graph.app_name,
            job_id=graph.job_id,
            config=config,
            inputs={sid: counts[sid] for sid in graph.inputs},
            outputs={sid: counts[sid] for sid in graph.outputs},
            intermediate_streams={sid: counts[sid] for sid in intermediates},
            side_inputs={sid: counts[sid] for sid in side_input_tables},
            side_input_tables=side_input_tables,
            streams=streams,
            input_operators=all_input_ops,
            operators=by_id,
            tables={table_id: decl.table for table_id, decl in graph.tables.items()},
            stages=stages,
            join_streams={op_id: tuple(s) for op_id, s in join_streams.items()},
            window_ms=window_ms,
            default_system=default_system,
            _producers=producers,
            _stage_of=stage_of,
        )

    # -- streams and counts ----------------------------------------------------------------
    def _side_declarations(self) -> dict[str, StreamDeclaration]:
        result: dict[str, StreamDeclaration] = {}
        for decl in self.graph.tables.values():
            for side in decl.side_inputs:
                result.setdefault(side.stream_id, side)
        return result

    def _declared_counts(self) -> dict[str, int]:
        """Partition counts of inputs, outputs and side inputs: descriptor, else the system."""
        counts: dict[str, int] = {}
        asked: dict[tuple[int, str], int | None] = {}
        groups = (
            ("input", self.graph.inputs),
            ("output", self.graph.outputs),
            ("side input", self._side_declarations()),
        )
        for kind, declarations in groups:
            for stream_id, decl in declarations.items():
                if decl.partitions is not None:
                    counts[stream_id] = decl.partitions
                    continue
                key = (id(decl.system), stream_id)
                if key not in asked:
                    asked[key] = decl.system.partition_count(stream_id)
                count = asked[key]
                if count is None:
                    system = decl.system.name
                    call = "output" if kind == "output" else "input"
                    msg = (
                        f"{kind} stream {stream_id!r} does not exist in system {system!r} and its "
                        f"descriptor gives no partition count: create the stream first or pass "
                        f"partitions=N to {system}.{call}({stream_id!r}, ...)"
                    )
                    raise PlanError(msg)
                if not isinstance(count, int) or count <= 0:
                    msg = f"system {decl.system.name!r} reported {count!r} partitions for {kind} stream {stream_id!r}"
                    raise PlanError(msg)
                counts[stream_id] = count
        return counts

    def _infer_remaining(
        self,
        intermediates: list[str],
        counts: dict[str, int],
        shuffles: Mapping[str, PartitionByOperatorSpec | BroadcastOperatorSpec],
    ) -> None:
        remaining = [sid for sid in intermediates if sid not in counts]
        if not remaining:
            return
        config = self.user_config
        if config.get_str("job.intermediate.stream.partitions") is not None:
            partitions = config.get_int("job.intermediate.stream.partitions")
            if partitions <= 0:
                msg = (
                    f"job.intermediate.stream.partitions must be positive, got {partitions}; "
                    "remove it to infer the count from the inputs and outputs"
                )
                raise PlanError(msg)
        else:
            declared = [counts[s] for s in self.graph.inputs] + [
                counts[s] for s in self.graph.outputs
            ]
            partitions = max(declared, default=0)
            if self.batch:
                partitions = min(partitions, MAX_INFERRED_PARTITIONS)
        for stream_id in remaining:
            if partitions <= 0:
                spec = shuffles[stream_id]
                msg = (
                    f"failed to assign a valid partition count to stream {stream_id!r} of "
                    f"{spec.opcode.value} {spec.op_id!r}{declared_at(spec)}: the app has no input or "
                    "output with a known count; set job.intermediate.stream.partitions"
                )
                raise PlanError(msg)
            counts[stream_id] = partitions

    # -- systems and configs ---------------------------------------------------------------
    def _systems(self) -> dict[str, StreamSystemLike]:
        """System objects by name, first declaration first."""
        systems: dict[str, StreamSystemLike] = {}
        for declarations in (self.graph.inputs, self._side_declarations(), self.graph.outputs):
            for decl in declarations.values():
                systems.setdefault(decl.system.name, decl.system)
        return systems

    def _default_system(
        self, systems: Mapping[str, StreamSystemLike], shuffles: Mapping[str, OperatorSpec]
    ) -> StreamSystemLike | None:
        if "job.default.system" in self.user_config:
            name = self.user_config["job.default.system"]
            system = systems.get(name)
            if system is None and shuffles:
                first = next(iter(shuffles.values()))
                msg = (
                    f"job.default.system={name!r} names no system of app {self.graph.app_name!r} "
                    f"(known: {sorted(systems) or 'none'}), so {first.opcode.value} {first.op_id!r} "
                    "has nowhere to put its intermediate stream; name one of the known systems"
                )
                raise PlanError(msg)
            return system
        if systems:
            return next(iter(systems.values()))
        if shuffles:
            first = next(iter(shuffles.values()))
            msg = (
                f"{first.opcode.value} {first.op_id!r}{declared_at(first)} needs a system for its "
                "intermediate stream: declare an input or set job.default.system"
            )
            raise PlanError(msg)
        return None

    def _stream_infos(
        self,
        counts: Mapping[str, int],
        shuffles: Mapping[str, PartitionByOperatorSpec | BroadcastOperatorSpec],
        input_ops: Mapping[str, InputOperatorSpec],
        systems: Mapping[str, StreamSystemLike],
        default_system: StreamSystemLike | None,
    ) -> dict[str, StreamInfo]:
        streams: dict[str, StreamInfo] = {}
        for kind, declarations in (
            ("input", self.graph.inputs),
            ("side_input", self._side_declarations()),
            ("output", self.graph.outputs),
        ):
            for stream_id, decl in declarations.items():
                streams[stream_id] = StreamInfo(
                    stream_id=stream_id,
                    kind=kind,  # type: ignore[arg-type]
                    system=decl.system,
                    partitions=counts[stream_id],
                    serde=decl.serde,
                )
        run_id = self.user_config.get_str("app.run.id")
        for stream_id, spec in shuffles.items():
            system = default_system
            configured = self.user_config.get_str(f"streams.{stream_id}.samza.system")
            if configured is not None:
                system = systems.get(configured)
                if system is None:
                    msg = (
                        f"streams.{stream_id}.samza.system={configured!r} names no system of app "
                        f"{self.graph.app_name!r} (known: {sorted(systems)}); "
                        f"{spec.opcode.value} {spec.op_id!r} needs one of them"
                    )
                    raise PlanError(msg)
            assert system is not None  # _default_system raised otherwise
            serde: Serde | KVSerde | None = spec.serde
            if serde is None:
                serde = input_ops[stream_id].serde
            assert serde is not None
            # The planner owns these copies: the reading operator learns its stream's system.
            input_ops[stream_id].system_name = system.name
            streams[stream_id] = StreamInfo(
                stream_id=stream_id,
                kind="intermediate",
                system=system,
                partitions=counts[stream_id],
                serde=serde,
                is_broadcast=isinstance(spec, BroadcastOperatorSpec),
                physical_name=f"{stream_id}-{run_id}" if self.batch and run_id else stream_id,
            )
        return streams

    def _effective_config(
        self,
        streams: Mapping[str, StreamInfo],
        shuffles: Mapping[str, OperatorSpec],
        default_system: StreamSystemLike | None,
        window_ms: int | None,
    ) -> Config:
        user = self.user_config
        generated: dict[str, str] = {
            "app.name": self.graph.app_name,
            "job.name": self.graph.app_name,
            "app.id": self.graph.job_id,
            "job.id": self.graph.job_id,
        }
        if default_system is not None:
            generated["job.default.system"] = default_system.name
        broadcast_inputs: list[str] = []
        for stream_id in shuffles:
            info = streams[stream_id]
            prefix = f"streams.{stream_id}.samza."
            generated[prefix + "system"] = info.system_name
            generated[prefix + "physical.name"] = info.physical_name
            generated[prefix + "intermediate"] = "true"
            generated[prefix + "delete.committed.messages"] = "true"
            generated[prefix + "priority"] = str(_INT_MAX)
            if self.batch:
                generated[prefix + "offset.default"] = "oldest"
            if info.is_broadcast:
                broadcast_inputs.append(f"{info.system_name}.{info.physical_name}#0")
        if window_ms is not None:
            generated["task.window.ms"] = str(window_ms)
        merged = {**generated, **user.to_dict()}
        if broadcast_inputs:
            configured = user.get_list("task.broadcast.inputs")
            merged["task.broadcast.inputs"] = ",".join(
                [*configured, *(b for b in broadcast_inputs if b not in configured)]
            )
        return Config(merged)

    def _side_input_ops(self) -> dict[str, InputOperatorSpec]:
        """One input operator per side-input stream. Side inputs feed tables, not the operator
        DAG, so (as in Samza) they take no number from the op-id counter."""
        ops: dict[str, InputOperatorSpec] = {}
        for decl in self.graph.tables.values():
            for side in decl.side_inputs:
                if side.stream_id in ops:
                    continue
                spec = InputOperatorSpec(
                    op_id=f"{self.prefix}-{OpCode.INPUT.value}-side-{side.stream_id}",
                    opcode=OpCode.INPUT,
                    stream_id=side.stream_id,
                    system_name=side.system.name,
                    serde=side.serde,
                )
                spec.user_location = decl.user_location
                ops[side.stream_id] = spec
        return ops


# -- helpers --------------------------------------------------------------------------------
def _snapshot(operators: Iterable[OperatorSpec]) -> list[OperatorSpec]:
    """Copies of the specs with edges rewired, so later API calls do not change the plan."""
    originals = list(operators)
    copies: dict[int, OperatorSpec] = {id(spec): copy.copy(spec) for spec in originals}
    for spec in originals:
        clone = copies[id(spec)]
        clone.next_ops = [copies[id(nxt)] for nxt in spec.next_ops]
        if isinstance(clone, JoinOperatorSpec):
            if clone.left is not None:
                clone.left = copies[id(clone.left)]
            if clone.right is not None:
                clone.right = copies[id(clone.right)]
    return [copies[id(spec)] for spec in originals]


def _window_ms(operators: Iterable[OperatorSpec]) -> int | None:
    """GCD of every window's timer durations and every join's TTL, or None without any."""
    durations: list[int] = []
    for spec in operators:
        if isinstance(spec, WindowOperatorSpec) and spec.window is not None:
            durations.extend(spec.window.timer_durations_ms())
        elif isinstance(spec, JoinOperatorSpec) and spec.ttl_ms > 0:
            durations.append(spec.ttl_ms)
    positive = [d for d in durations if d > 0]
    return math.gcd(*positive) if positive else None

