"""MessageStream: the operators of a stream (the handles OutputStream and Table are in
:mod:`~samza_nb.api.handles`).

Every operator validates its arguments at the call, allocates its op id (SAMZA.md §11.1),
records where the user called it, and returns a new :class:`MessageStream`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from samza_nb.api._checks import check_function, describe, user_location
from samza_nb.api.handles import Application, OutputStream, Table
from samza_nb.errors import PlanError
from samza_nb.plan.functions import identity, kv_key
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    FilterOperatorSpec,
    FlatMapOperatorSpec,
    InputOperatorSpec,
    JoinOperatorSpec,
    MapOperatorSpec,
    MergeOperatorSpec,
    OpCode,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    SinkOperatorSpec,
    StreamTableJoinOperatorSpec,
    WindowOperatorSpec,
)
from samza_nb.plan.serdes import KVSerde, Serde, resolve_kv_serde, resolve_serde
from samza_nb.plan.tables import LocalTable
from samza_nb.plan.windows import WindowSpec, duration_ms

__all__ = ["MessageStream", "OutputStream", "Table"]


def _at(location: str | None) -> str:
    return f" (at {location})" if location else ""


class MessageStream:
    """A stream of messages inside one :class:`~samza_nb.api.StreamApplication`.

    Operators return new streams, so pipelines read fluently::

        views.filter(lambda v: v["country"] == "US").partition_by(key_fn, op_id="by-page")

    ``op_id`` is the id of the operator that produced the stream (for a partition_by or
    broadcast: that operator's id, which is also the intermediate stream's id).
    """

    __slots__ = ("_app", "_op_id", "_spec", "_terminal")

    def __init__(
        self,
        app: Application,
        spec: OperatorSpec,
        *,
        op_id: str | None = None,
        terminal: bool = False,
    ):
        self._app = app
        self._spec = spec
        self._op_id = op_id or spec.op_id
        self._terminal = terminal

    @property
    def op_id(self) -> str:
        """The full id of the operator that produced this stream."""
        return self._op_id

    @property
    def app(self) -> Application:
        return self._app

    @property
    def spec(self) -> OperatorSpec:
        """The spec whose output this stream is (the hidden input operator after a shuffle)."""
        return self._spec

    def __repr__(self) -> str:
        return f"MessageStream({self._op_id!r})"

    # -- internals -------------------------------------------------------------------------
    def _begin(
        self, opcode: OpCode, user_id: str | None, location: str | None, *, required: bool = False
    ) -> tuple[str, str]:
        """Validate this call's op id and return (op id, "opcode 'op id' (at file:line)")."""
        if self._terminal:
            msg = (
                f"{opcode.value}{_at(location)}: stream {self._op_id!r} comes from sink(), which "
                "ends the stream; attach operators before .sink(...)"
            )
            raise PlanError(msg)
        op_id = self._app._next_op_id(
            opcode, user_id, on=self._op_id, location=location, required=required
        )
        return op_id, f"{opcode.value} {op_id!r}{_at(location)}"

    def _add(
        self, spec: OperatorSpec, location: str | None, *, upstream: Iterable[MessageStream] = ()
    ) -> OperatorSpec:
        self._app._commit(spec, location)
        self._spec.register_next(spec)
        for other in upstream:
            other._spec.register_next(spec)
        return spec

    def _same_app(self, other: MessageStream | OutputStream | Table, name: str, what: str) -> None:
        if other.app is not self._app:
            msg = (
                f"{name}: the {what} belongs to app {other.app.name!r}, not {self._app.name!r}; "
                "streams, outputs and tables can only be used in the app that created them"
            )
            raise PlanError(msg)

    # -- stateless operators ---------------------------------------------------------------
    def map(self, fn: Callable[[Any], Any]) -> MessageStream:
        """Apply ``fn`` to every message; a ``None`` result is dropped.

        >>> from samza_nb.api import StreamApplication
        >>> from samza_nb.systems import EmbeddedSystem
        >>> app = StreamApplication("doc-map")
        >>> views = app.input(EmbeddedSystem().input("views", partitions=2))
        >>> views.map(lambda v: v["page"]).op_id
        'doc-map-1-map-1'
        """
        location = user_location()
        op_id, name = self._begin(OpCode.MAP, None, location)
        check_function(fn, what="fn", operator=name, arity=1, hint="the message")
        spec = self._add(MapOperatorSpec(op_id=op_id, opcode=OpCode.MAP, fn=fn), location)
        return MessageStream(self._app, spec)

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> MessageStream:
        """Apply ``fn`` to every message and emit each element of the iterable it returns."""
        location = user_location()
        op_id, name = self._begin(OpCode.FLAT_MAP, None, location)
        check_function(fn, what="fn", operator=name, arity=1, hint="the message")
        spec = self._add(FlatMapOperatorSpec(op_id=op_id, opcode=OpCode.FLAT_MAP, fn=fn), location)
        return MessageStream(self._app, spec)

    def filter(self, fn: Callable[[Any], bool]) -> MessageStream:
        """Keep the messages for which ``fn(message)`` is true.

        >>> from samza_nb.api import StreamApplication
        >>> from samza_nb.systems import EmbeddedSystem
        >>> app = StreamApplication("doc-filter")
        >>> views = app.input(EmbeddedSystem().input("views", partitions=2))
        >>> views.filter(lambda v: v["country"] == "US").op_id
        'doc-filter-1-filter-1'
        """
        location = user_location()
        op_id, name = self._begin(OpCode.FILTER, None, location)
        check_function(fn, what="fn", operator=name, arity=1, hint="the message")
        spec = self._add(FilterOperatorSpec(op_id=op_id, opcode=OpCode.FILTER, fn=fn), location)
        return MessageStream(self._app, spec)

    def sink(self, fn: Callable[[Any], Any]) -> MessageStream:
        """Call ``fn(message)`` for every message (its result is ignored). A sink ends the
        stream: the returned stream has an ``op_id`` but takes no further operators."""
        location = user_location()
        op_id, name = self._begin(OpCode.SINK, None, location)
        check_function(fn, what="fn", operator=name, arity=1, hint="the message")
        spec = self._add(SinkOperatorSpec(op_id=op_id, opcode=OpCode.SINK, fn=fn), location)
        return MessageStream(self._app, spec, terminal=True)

    def merge(self, *others: MessageStream) -> MessageStream:
        """The union of this stream and ``others``, in arrival order. With no others this
        stream itself is returned and no operator is added (as in Samza)."""
        location = user_location()
        if not others:
            return self
        for other in others:
            if isinstance(other, list | tuple):
                msg = (
                    f"merge{_at(location)} takes streams as arguments: stream.merge(a, b), "
                    "or MessageStream.merge_all([...]) for a list"
                )
                raise PlanError(msg)
            if not isinstance(other, MessageStream):
                msg = f"merge{_at(location)}: expected MessageStreams, got {describe(other)}"
                raise PlanError(msg)
        op_id, name = self._begin(OpCode.MERGE, None, location)
        for other in others:
            self._same_app(other, name, "merged stream")
            if other._terminal:
                msg = f"{name}: stream {other.op_id!r} comes from sink(), which ends the stream"
                raise PlanError(msg)
        spec = self._add(
            MergeOperatorSpec(op_id=op_id, opcode=OpCode.MERGE), location, upstream=others
        )
        return MessageStream(self._app, spec)

    @staticmethod
    def merge_all(streams: Iterable[MessageStream]) -> MessageStream:
        """Merge a collection of streams (at least one) of the same app."""
        members = list(streams)
        if not members:
            msg = f"MessageStream.merge_all{_at(user_location())} needs at least one stream"
            raise PlanError(msg)
        first = members[0]
        if not isinstance(first, MessageStream):
            msg = f"MessageStream.merge_all{_at(user_location())}: expected MessageStreams, got {describe(first)}"
            raise PlanError(msg)
        return first.merge(*members[1:])

    # -- shuffles --------------------------------------------------------------------------
    def partition_by(
        self,
        key_fn: Callable[[Any], Any],
        value_fn: Callable[[Any], Any] | None = None,
        *,
        op_id: str | None = None,
        serde: KVSerde | None = None,
    ) -> MessageStream:
        """Re-key every message as ``KV(key_fn(m), value_fn(m))`` and repartition by the key
        through an intermediate stream whose id is this operator's id. ``op_id`` is required;
        ``serde`` must be a KV serde (default ``serdes.kv(json(), json())``).

        >>> from samza_nb.api import StreamApplication
        >>> from samza_nb.systems import EmbeddedSystem
        >>> app = StreamApplication("doc-pb")
        >>> views = app.input(EmbeddedSystem().input("views", partitions=2))
        >>> views.partition_by(lambda v: v["page"], op_id="by-page").op_id
        'doc-pb-1-partition_by-by-page'
        """
        location = user_location()
        full_id, name = self._begin(OpCode.PARTITION_BY, op_id, location, required=True)
        check_function(key_fn, what="key_fn", operator=name, arity=1, hint="the message")
        if value_fn is not None:
            check_function(value_fn, what="value_fn", operator=name, arity=1, hint="the message")
        kv_serde = resolve_kv_serde(serde, where=name)
        self._app._check_stream_id_free(full_id, name)
        spec = PartitionByOperatorSpec(
            op_id=full_id,
            opcode=OpCode.PARTITION_BY,
            key_fn=key_fn,
            value_fn=value_fn if value_fn is not None else identity,
            serde=kv_serde,
            stream_id=full_id,
        )
        self._add(spec, location)
        return self._read_intermediate(full_id, kv_serde, location)

    def broadcast(
        self, *, op_id: str | None = None, serde: Serde | str | None = None
    ) -> MessageStream:
        """Send every message to every downstream task, through a one-partition intermediate
        stream whose id is this operator's id. ``op_id`` is required; ``serde`` defaults to
        JSON (use ``serdes.kv(...)`` to keep KV messages as KVs)."""
        location = user_location()
        full_id, name = self._begin(OpCode.BROADCAST, op_id, location, required=True)
        resolved = resolve_serde(serde if serde is not None else "json", where=name)
        self._app._check_stream_id_free(full_id, name)
        spec = BroadcastOperatorSpec(
            op_id=full_id, opcode=OpCode.BROADCAST, serde=resolved, stream_id=full_id
        )
        self._add(spec, location)
        return self._read_intermediate(full_id, resolved, location)

    def _read_intermediate(
        self, stream_id: str, serde: Serde | KVSerde, location: str | None
    ) -> MessageStream:
        """The hidden input operator of an intermediate stream (it takes an op id too)."""
        input_id = self._app._next_op_id(OpCode.INPUT, None, on=stream_id, location=location)
        reader = InputOperatorSpec(
            op_id=input_id,
            opcode=OpCode.INPUT,
            stream_id=stream_id,
            serde=serde,
            is_intermediate=True,
        )
        self._app._commit(reader, location)
        return MessageStream(self._app, reader, op_id=stream_id)

    # -- stateful operators ----------------------------------------------------------------
    def window(self, window: WindowSpec, *, op_id: str | None = None) -> MessageStream:
        """Group messages into windows (``Windows.tumbling`` …) and emit a ``WindowPane`` per
        firing. ``op_id`` is required: it names the window's state store."""
        location = user_location()
        full_id, name = self._begin(OpCode.WINDOW, op_id, location, required=True)
        if not isinstance(window, WindowSpec):
            msg = (
                f"{name}: window must be built with Windows.tumbling, Windows.keyed_tumbling, "
                f"Windows.keyed_session or Windows.(keyed_)hopping, got {describe(window)}"
            )
            raise PlanError(msg)
        spec = self._add(
            WindowOperatorSpec(op_id=full_id, opcode=OpCode.WINDOW, window=window), location
        )
        return MessageStream(self._app, spec)

    def join(
        self,
        other: MessageStream,
        join_fn: Callable[[Any, Any], Any],
        *,
        ttl: timedelta | int,
        op_id: str | None = None,
        key_fn: Callable[[Any], Any] | None = None,
        other_key_fn: Callable[[Any], Any] | None = None,
        keep: str = "latest",
    ) -> MessageStream:
        """Stream-stream join: ``join_fn(this_message, other_message)`` for messages of equal
        key seen within ``ttl`` (a timedelta or milliseconds) of each other. Keys default to
        ``message.key`` (KV messages, as after partition_by). Both streams must have the same
        partition count (the planner checks). ``op_id`` is required: it names the join's
        stores.

        ``keep="latest"`` (Samza's join) keeps the latest message per key and side: a message
        joins the other side's latest one, so which pairs come out depends on how the sides
        interleave. ``keep="all"`` (beyond Samza) keeps every message per key and side for
        ``ttl`` (processing time): each message joins every message of the other side kept
        for its key, so every pair of equal-keyed messages that reach the join within ``ttl``
        of each other comes out once, in whatever order the sides arrive (an inner join, as
        Flink's regular join with a state TTL). Both keep their state in the task's stores
        ``<op id>-L`` and ``<op id>-R`` with their changelogs."""
        location = user_location()
        full_id, name = self._begin(OpCode.JOIN, op_id, location, required=True)
        if isinstance(other, Table | LocalTable):
            msg = f"{name}: to join with a table use stream.join_table(table, join_fn)"
            raise PlanError(msg)
        if not isinstance(other, MessageStream):
            msg = f"{name}: the other side must be a MessageStream, got {describe(other)}"
            raise PlanError(msg)
        self._same_app(other, name, "other stream")
        if other._spec is self._spec:
            msg = (
                f"{name}: cannot join a MessageStream with itself; to pair messages of one "
                "stream, branch it first (for example stream.map(...) on each side)"
            )
            raise PlanError(msg)
        if other._terminal:
            msg = f"{name}: stream {other.op_id!r} comes from sink(), which ends the stream"
            raise PlanError(msg)
        check_function(
            join_fn, what="join_fn", operator=name, arity=2, hint="this message, other message"
        )
        if key_fn is not None:
            check_function(key_fn, what="key_fn", operator=name, arity=1, hint="the message")
        if other_key_fn is not None:
            check_function(
                other_key_fn, what="other_key_fn", operator=name, arity=1, hint="the message"
            )
        ttl_ms = duration_ms(ttl, what=f"{name}: ttl")
        if keep not in ("latest", "all"):
            msg = f"{name}: keep must be 'latest' or 'all', got {describe(keep)}"
            raise PlanError(msg)
        spec = JoinOperatorSpec(
            op_id=full_id,
            opcode=OpCode.JOIN,
            left=self._spec,
            right=other._spec,
            join_fn=join_fn,
            left_key_fn=key_fn if key_fn is not None else kv_key,
            right_key_fn=other_key_fn if other_key_fn is not None else kv_key,
            ttl_ms=ttl_ms,
            keep_all=keep == "all",
        )
        self._add(spec, location, upstream=(other,))
        return MessageStream(self._app, spec)

    def join_table(
        self,
        table: Table | LocalTable,
        join_fn: Callable[[Any, Any], Any],
        *,
        key_fn: Callable[[Any], Any] | None = None,
    ) -> MessageStream:
        """Stream-table join: ``join_fn(message, KV(key, value) or None)`` with the table entry
        for ``key_fn(message)`` (default ``message.key``); a ``None`` result is dropped."""
        location = user_location()
        op_id, name = self._begin(OpCode.JOIN, None, location)
        local = self._app._resolve_table(table, name)
        check_function(join_fn, what="join_fn", operator=name, arity=2, hint="message, KV or None")
        if key_fn is not None:
            check_function(key_fn, what="key_fn", operator=name, arity=1, hint="the message")
        spec = StreamTableJoinOperatorSpec(
            op_id=op_id,
            opcode=OpCode.JOIN,
            table=local,
            join_fn=join_fn,
            key_fn=key_fn if key_fn is not None else kv_key,
        )
        self._add(spec, location)
        return MessageStream(self._app, spec)

    # -- writes ----------------------------------------------------------------------------
    def send_to(self, target: OutputStream | Table | LocalTable) -> MessageStream:
        """Write every message to an output stream (a KV is written as key and value) or put
        it into a table (messages must be KVs).

        Returns a stream of the same messages after they are written, so writes can fan out
        (``s.send_to(a).send_to(b)``) and its ``op_id`` names the send_to operator. (Samza's
        Java ``sendTo`` returns nothing; the pass-through follows SAMZA.md §11.2.)
        """
        location = user_location()
        op_id, name = self._begin(OpCode.SEND_TO, None, location)
        spec: OperatorSpec
        if isinstance(target, OutputStream):
            self._same_app(target, name, "output")
            declaration = target._declaration
            spec = OutputOperatorSpec(
                op_id=op_id,
                opcode=OpCode.SEND_TO,
                stream_id=declaration.stream_id,
                system_name=declaration.system.name,
                serde=declaration.serde,
            )
        elif isinstance(target, Table | LocalTable):
            spec = SendToTableOperatorSpec(
                op_id=op_id, opcode=OpCode.SEND_TO, table=self._app._resolve_table(target, name)
            )
        elif hasattr(target, "stream_id") and hasattr(target, "system"):
            msg = (
                f"{name}: declare the output first: out = app.output(descriptor), then "
                f"stream.send_to(out) (got descriptor {describe(target)})"
            )
            raise PlanError(msg)
        else:
            msg = f"{name}: send_to takes an OutputStream or a Table, got {describe(target)}"
            raise PlanError(msg)
        self._add(spec, location)
        return MessageStream(self._app, spec)
