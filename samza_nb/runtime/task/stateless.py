"""The stateless operators: map, flat_map, filter and sink. Each is a step of a compiled chain
(runtime/task/fusion.py holds what each step does and how a chain of them runs as one function)."""

from __future__ import annotations

from samza_nb.runtime.task.operators import _FusedImpl

__all__ = ["FilterImpl", "FlatMapImpl", "MapImpl", "SinkImpl"]


class MapImpl(_FusedImpl):
    """One message out per message in; None drops the message (Samza's rule), counted."""

    step = "map"


class FlatMapImpl(_FusedImpl):
    """Every item of the returned iterable goes on; None drops the message, counted."""

    step = "flat_map"


class FilterImpl(_FusedImpl):
    """The message goes on when the predicate is true."""

    step = "filter"


class SinkImpl(_FusedImpl):
    """The user function receives the message; nothing goes on."""

    step = "sink"
