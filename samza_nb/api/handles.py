"""The handles an application gives out for its outputs and tables (OutputStream, Table), and
what streams and handles ask of the application they belong to."""

from __future__ import annotations

from typing import Protocol

from samza_nb.plan.graph import StreamDeclaration
from samza_nb.plan.operators import OpCode, OperatorSpec
from samza_nb.plan.serdes import KVSerde, Serde
from samza_nb.plan.tables import LocalTable

__all__ = ["OutputStream", "Table"]


class Application(Protocol):
    """What streams ask of the :class:`~samza_nb.api.StreamApplication` they belong to (named
    here so the stream modules need not import the application, which imports them)."""

    @property
    def name(self) -> str: ...

    def _next_op_id(
        self,
        opcode: OpCode,
        user_id: str | None,
        *,
        on: str | None = None,
        location: str | None = None,
        required: bool = False,
    ) -> str: ...

    def _commit(self, spec: OperatorSpec, location: str | None) -> None: ...

    def _check_stream_id_free(self, stream_id: str, name: str) -> None: ...

    def _resolve_table(self, table: Table | LocalTable, name: str) -> LocalTable: ...


class OutputStream:
    """An output stream declared with ``app.output(descriptor)``; pass it to ``send_to``."""

    __slots__ = ("_app", "_declaration")

    def __init__(self, app: Application, declaration: StreamDeclaration):
        self._app = app
        self._declaration = declaration

    @property
    def app(self) -> Application:
        return self._app

    @property
    def stream_id(self) -> str:
        return self._declaration.stream_id

    @property
    def system_name(self) -> str:
        return self._declaration.system.name

    @property
    def partitions(self) -> int | None:
        """The partition count the descriptor gave (None: the planner asks the system)."""
        return self._declaration.partitions

    @property
    def serde(self) -> Serde | KVSerde:
        return self._declaration.serde

    def __repr__(self) -> str:
        return f"OutputStream({self.system_name}.{self.stream_id}, app={self._app.name!r})"


class Table:
    """A table registered with ``app.table(LocalTable(...))``; usable by ``send_to`` and
    ``join_table``."""

    __slots__ = ("_app", "_table")

    def __init__(self, app: Application, table: LocalTable):
        self._app = app
        self._table = table

    @property
    def app(self) -> Application:
        return self._app

    @property
    def table_id(self) -> str:
        return self._table.table_id

    @property
    def spec(self) -> LocalTable:
        return self._table

    def __repr__(self) -> str:
        return f"Table({self.table_id!r}, app={self._app.name!r})"
