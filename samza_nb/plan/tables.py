"""Table specs: local key-value tables usable by send_to and join_table."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from samza_nb.errors import PlanError
from samza_nb.plan.serdes import Serde, resolve_serde

__all__ = ["LocalTable", "SideInputProcessor"]

SideInputProcessor = Callable[[Any], Iterable[Any]]
"""Turns one side-input message into the KV entries to put into the table."""

_TABLE_ID = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, eq=False)
class LocalTable:
    """A local key-value table, kept in a RocksDB store per task with a changelog.

    ``side_inputs`` are input descriptors whose messages fill the table (through
    ``side_input_processor``, default: the message is a KV, or a mapping with key/value).
    """

    table_id: str
    key_serde: Serde | str = "json"
    value_serde: Serde | str = "json"
    side_inputs: tuple[Any, ...] = field(default=())
    side_input_processor: SideInputProcessor | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.table_id, str) or not _TABLE_ID.match(self.table_id):
            msg = f"table id {self.table_id!r} must match [A-Za-z0-9_-]+"
            raise PlanError(msg)
        object.__setattr__(self, "key_serde", resolve_serde(self.key_serde, where=f"table {self.table_id}"))
        object.__setattr__(
            self, "value_serde", resolve_serde(self.value_serde, where=f"table {self.table_id}")
        )
        object.__setattr__(self, "side_inputs", tuple(self.side_inputs))

    def __repr__(self) -> str:
        return f"LocalTable({self.table_id!r})"
