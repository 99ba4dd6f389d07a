"""StreamApplication: declares inputs, outputs and tables, allocates op ids, plans itself."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from html import escape
from typing import Any

from samza_nb.api._checks import check_function, describe, user_location
from samza_nb.api.stream import MessageStream, OutputStream, Table
from samza_nb.config import Config
from samza_nb.errors import ConfigError, PlanError, SamzaNbError
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.plan.graph import SpecGraph, StreamDeclaration, TableDeclaration
from samza_nb.plan.operators import InputOperatorSpec, OpCode, OperatorSpec
from samza_nb.plan.planner import plan_application
from samza_nb.plan.serdes import resolve_serde
from samza_nb.plan.tables import LocalTable
from samza_nb.systems.descriptors import OutputDescriptor

__all__ = ["StreamApplication"]

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
# Samza's [\d\w-_]+ with Java's ASCII \w.
_USER_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_OP_ID_PURPOSE = {
    OpCode.PARTITION_BY: ("by-key", "it names the intermediate stream"),
    OpCode.BROADCAST: ("to-all", "it names the intermediate stream"),
    OpCode.WINDOW: ("counts", "it names the window's state store"),
    OpCode.JOIN: ("joined", "it names the join's state stores"),
}


def _at(location: str | None) -> str:
    return f" (at {location})" if location else ""


class StreamApplication:
    """A Samza-style stream application: inputs, operators, outputs and tables.

    >>> from samza_nb.api import StreamApplication
    >>> from samza_nb.systems import EmbeddedSystem
    >>> system = EmbeddedSystem("embedded")
    >>> app = StreamApplication("page-views")
    >>> views = app.input(system.input("page-views", partitions=4))
    >>> counts = app.output(system.output("counts", partitions=4))
    >>> _ = views.partition_by(lambda v: v["page"], op_id="by-page").send_to(counts)
    >>> plan = app.plan()
    >>> plan.intermediate_streams
    {'page-views-1-partition_by-by-page': 4}
    """

    def __init__(
        self,
        name: str,
        job_id: str = "1",
        config: Config | Mapping[str, Any] | None = None,
    ):
        if not isinstance(name, str) or not _NAME.match(name):
            msg = f"app name {name!r} must be non-empty and use only letters, digits, '_' and '-'"
            raise PlanError(msg)
        if isinstance(job_id, int) and not isinstance(job_id, bool):
            job_id = str(job_id)
        if not isinstance(job_id, str) or not _NAME.match(job_id):
            msg = f"job_id {job_id!r} of app {name!r} must use only letters, digits, '_' and '-'"
            raise PlanError(msg)
        self._name = name
        self._job_id = job_id
        self._config = Config.of(config)
        for keys, expected in ((("app.name", "job.name"), name), (("app.id", "job.id"), job_id)):
            for key in keys:
                value = self._config.get_str(key) if key in self._config else None
                if value is not None and value != expected:
                    msg = (
                        f"config {key}={value!r} disagrees with StreamApplication({name!r}, "
                        f"job_id={job_id!r}); drop the key or make them equal"
                    )
                    raise ConfigError(msg)
        self._next_op_num = 0
        self._op_ids: set[str] = set()
        self._operators: list[OperatorSpec] = []
        self._inputs: dict[str, StreamDeclaration] = {}
        self._outputs: dict[str, StreamDeclaration] = {}
        self._tables: dict[str, TableDeclaration] = {}
        self._table_handles: dict[str, Table] = {}
        self._side_inputs: dict[str, str] = {}  # side-input stream id -> first table using it
        self._intermediates: set[str] = set()

    # -- properties ------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def job_id(self) -> str:
        return self._job_id

    @property
    def config(self) -> Config:
        """The application's own config (the plan's config adds generated entries)."""
        return self._config

    @property
    def operator_ids(self) -> list[str]:
        """Every op id allocated so far, in creation order."""
        return [spec.op_id for spec in self._operators]

    # -- op ids (SAMZA.md §11.1) -------------------------------------------------------------
    def _next_op_id(
        self,
        opcode: OpCode,
        user_id: str | None,
        *,
        on: str | None = None,
        location: str | None = None,
        required: bool = False,
    ) -> str:
        """The id the next operator gets, validated but not yet taken (see :meth:`_commit`)."""
        if user_id is not None and not isinstance(user_id, str):
            msg = f"{opcode.value}{_at(location)}: op_id must be a string, got {describe(user_id)}"
            raise PlanError(msg)
        suffix = user_id.strip() if user_id else ""
        if not suffix:
            if required:
                example, why = _OP_ID_PURPOSE.get(opcode, ("my-op", "it names the operator"))
                stream = f" on stream {on!r}" if on else ""
                msg = (
                    f"{opcode.value}{stream}{_at(location)} needs an op_id: "
                    f'.{opcode.value}(..., op_id="{example}"); {why}, so keep it stable across runs'
                )
                raise PlanError(msg)
            suffix = str(self._next_op_num)
        elif not _USER_ID.match(suffix):
            msg = (
                f"operator id {user_id!r} of {opcode.value}{_at(location)} must not contain spaces "
                "or special characters: use letters, digits, '_' and '-'"
            )
            raise PlanError(msg)
        op_id = f"{self._name}-{self._job_id}-{opcode.value}-{suffix}"
        if op_id in self._op_ids:
            msg = (
                f"Found duplicate operator ID {op_id!r} at {opcode.value}{_at(location)}: "
                "give each operator its own op_id"
            )
            raise PlanError(msg)
        return op_id

    def _commit(self, spec: OperatorSpec, location: str | None) -> None:
        """Take ``spec.op_id`` (the counter moves on every id, user-named or not)."""
        self._op_ids.add(spec.op_id)
        self._next_op_num += 1
        spec.user_location = location
        self._operators.append(spec)

    def _allocate_op_id(self, opcode: OpCode, user_id: str | None = None) -> str:
        """Samza's getNextOpId: validate, take and return the next id (no operator)."""
        op_id = self._next_op_id(opcode, user_id)
        self._op_ids.add(op_id)
        self._next_op_num += 1
        return op_id

    def _check_stream_id_free(self, stream_id: str, name: str) -> None:
        if (
            stream_id in self._inputs
            or stream_id in self._outputs
            or stream_id in self._side_inputs
        ):
            msg = (
                f"{name}: its intermediate stream id {stream_id!r} is already a declared stream "
                "of the app; choose another op_id"
            )
            raise PlanError(msg)

    # -- declarations ----------------------------------------------------------------------
    def _declaration(self, descriptor: Any, role: str, location: str | None) -> StreamDeclaration:
        call = "app.output" if role == "output" else "app.input"
        if role != "output" and isinstance(descriptor, OutputDescriptor):
            msg = (
                f"{call}{_at(location)}: {descriptor!r} is an output descriptor; make an input "
                f"one with system.input({descriptor.stream_id!r}, ...)"
            )
            raise PlanError(msg)
        if role == "output" and isinstance(descriptor, MessageStream | OutputStream):
            msg = f"{call}{_at(location)} takes a descriptor such as system.output('name'), got {describe(descriptor)}"
            raise PlanError(msg)
        try:
            stream_id = descriptor.stream_id
            system = descriptor.system
            partitions = descriptor.partitions
            serde = descriptor.serde
            system_name = system.name
        except AttributeError:
            example = "system.output('name')" if role == "output" else "system.input('name')"
            msg = f"{call}{_at(location)} takes a descriptor such as {example}, got {describe(descriptor)}"
            raise PlanError(msg) from None
        if partitions is not None and (
            not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0
        ):
            msg = f"{role} stream {stream_id!r}{_at(location)}: partitions must be a positive int, got {partitions!r}"
            raise PlanError(msg)
        if not callable(getattr(system, "partition_count", None)):
            msg = f"{call}{_at(location)}: system {system_name!r} has no partition_count(stream_id) method"
            raise PlanError(msg)
        self._check_new_stream(stream_id, role, location)
        return StreamDeclaration(
            stream_id=stream_id,
            system=system,
            partitions=partitions,
            serde=resolve_serde(serde, where=f"{role} stream {stream_id!r}"),
            user_location=location,
        )

    def _check_new_stream(self, stream_id: str, role: str, location: str | None) -> None:
        for kind, declared in (("an input", self._inputs), ("an output", self._outputs)):
            if stream_id in declared:
                where = _at(declared[stream_id].user_location)
                msg = (
                    f"{role} stream {stream_id!r}{_at(location)} is already {kind} of app "
                    f"{self._name!r}{where.replace(' (at', ' (declared at')}; declare each stream once "
                    "and reuse the object returned"
                )
                raise PlanError(msg)
        if stream_id in self._side_inputs and role != "side input":
            msg = (
                f"{role} stream {stream_id!r}{_at(location)} is already a side input of table "
                f"{self._side_inputs[stream_id]!r}; a stream is either a side input or an input/output"
            )
            raise PlanError(msg)
        if stream_id in self._op_ids:
            msg = f"{role} stream {stream_id!r}{_at(location)} has the id of an intermediate stream of the app"
            raise PlanError(msg)

    def input(self, descriptor: Any) -> MessageStream:
        """Declare an input stream (``system.input("id", partitions=..., serde=...)``)."""
        location = user_location()
        declaration = self._declaration(descriptor, "input", location)
        op_id = self._next_op_id(OpCode.INPUT, None, location=location)
        spec = InputOperatorSpec(
            op_id=op_id,
            opcode=OpCode.INPUT,
            stream_id=declaration.stream_id,
            system_name=declaration.system.name,
            serde=declaration.serde,
            is_intermediate=False,
        )
        self._commit(spec, location)
        self._inputs[declaration.stream_id] = declaration
        return MessageStream(self, spec)

    def output(self, descriptor: Any) -> OutputStream:
        """Declare an output stream (``system.output("id", ...)``); outputs take no op id."""
        location = user_location()
        declaration = self._declaration(descriptor, "output", location)
        self._outputs[declaration.stream_id] = declaration
        return OutputStream(self, declaration)

    def table(self, table: LocalTable) -> Table:
        """Register a table for ``send_to`` and ``join_table``; its side inputs become inputs
        of the job that fill the table."""
        location = user_location()
        if isinstance(table, Table):
            table = table.spec
        if not isinstance(table, LocalTable):
            msg = f"app.table{_at(location)} takes a LocalTable('name', ...), got {describe(table)}"
            raise PlanError(msg)
        existing = self._tables.get(table.table_id)
        if existing is not None:
            if existing.table is table:
                return self._table_handles[table.table_id]
            msg = (
                f"table {table.table_id!r}{_at(location)} is already registered in app "
                f"{self._name!r}{_at(existing.user_location)}; give the new table another id"
            )
            raise PlanError(msg)
        if table.side_input_processor is not None:
            check_function(
                table.side_input_processor,
                what="side_input_processor",
                operator=f"table {table.table_id!r}{_at(location)}",
                arity=1,
                hint="the side-input message",
            )
        sides: list[StreamDeclaration] = []
        for descriptor in table.side_inputs:
            side = self._declaration(descriptor, "side input", location)
            sides.append(side)
        for side in sides:
            self._side_inputs.setdefault(side.stream_id, table.table_id)
        self._tables[table.table_id] = TableDeclaration(table, tuple(sides), location)
        handle = Table(self, table)
        self._table_handles[table.table_id] = handle
        return handle

    def _resolve_table(self, table: Table | LocalTable, name: str) -> LocalTable:
        if isinstance(table, Table):
            if table.app is not self:
                msg = (
                    f"{name}: table {table.table_id!r} belongs to app {table.app.name!r}, not "
                    f"{self._name!r}; register it with this app's app.table(...)"
                )
                raise PlanError(msg)
            return table.spec
        if isinstance(table, LocalTable):
            declaration = self._tables.get(table.table_id)
            if declaration is None or declaration.table is not table:
                msg = f"{name}: register table {table.table_id!r} first: t = app.table(LocalTable(...))"
                raise PlanError(msg)
            return table
        msg = f"{name}: expected a Table from app.table(...), got {describe(table)}"
        raise PlanError(msg)

    # -- planning --------------------------------------------------------------------------
    def spec_graph(self) -> SpecGraph:
        """What the planner reads (declarations and operator specs, in creation order)."""
        return SpecGraph(
            app_name=self._name,
            job_id=self._job_id,
            config=self._config,
            inputs=dict(self._inputs),
            outputs=dict(self._outputs),
            tables=dict(self._tables),
            operators=list(self._operators),
        )

    def plan(self, config: Config | Mapping[str, Any] | None = None) -> ExecutionPlan:
        """Plan the application: partition counts, stages, generated config (SAMZA.md §11.4).

        ``config`` entries override the application's config for this plan. Raises
        :class:`~samza_nb.errors.PlanError` for an invalid graph.
        """
        overrides = Config.of(config) if config is not None else None
        return plan_application(self.spec_graph(), overrides)

    # -- display ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (
            f"StreamApplication({self._name!r}, job_id={self._job_id!r}: {len(self._inputs)} "
            f"inputs, {len(self._outputs)} outputs, {len(self._tables)} tables, "
            f"{len(self._operators)} operators)"
        )

    def _quiet_plan(self) -> ExecutionPlan | SamzaNbError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return self.plan()
            except SamzaNbError as error:
                return error

    def _repr_html_(self) -> str:
        plan = self._quiet_plan()
        if isinstance(plan, ExecutionPlan):
            return plan._repr_html_()
        return f"<pre>{escape(repr(self))}\ncannot plan: {escape(str(plan))}</pre>"

    def _repr_svg_(self) -> str | None:
        plan = self._quiet_plan()
        return plan._repr_svg_() if isinstance(plan, ExecutionPlan) else None
