"""The names of a plan's stores: a window's is its op id, a join's two are its op id with
``-L`` and ``-R``, a table's is its table id. Each store is a RocksDB folder named after it and
has a changelog stream named after it, so names must be unique and short enough for a folder.
"""

from __future__ import annotations

from collections.abc import Iterable

from samza_nb.errors import PlanError
from samza_nb.plan.operators import JoinOperatorSpec, OperatorSpec, WindowOperatorSpec

__all__ = ["check_store_names", "operator_store_names"]

#: The longest store name: a store is a folder named after it (255 bytes at most on Linux) and
#: its changelog a stream named ``<app>-<job>-<store>-changelog`` (249 on Kafka).
_LONGEST_STORE_NAME = 200


def operator_store_names(spec: OperatorSpec) -> list[str]:
    """The stores an operator keeps its state in (none for a stateless one)."""
    if isinstance(spec, WindowOperatorSpec):
        return [spec.op_id]
    if isinstance(spec, JoinOperatorSpec):
        return [f"{spec.op_id}-L", f"{spec.op_id}-R"]
    return []


def check_store_names(operators: Iterable[OperatorSpec], tables: Iterable[str]) -> None:
    """Every store has a name of its own and one short enough for a folder: two stores of one
    name would share their RocksDB files and their changelog."""
    owners: dict[str, str] = {table: f"table {table!r}" for table in tables}
    for spec in operators:
        for name in operator_store_names(spec):
            if name in owners:
                msg = (
                    f"operator {spec.op_id!r} would keep its state in the store {name!r}, which "
                    f"is already the store of {owners[name]}: rename the table or give the "
                    "operator another op_id"
                )
                raise PlanError(msg)
            owners[name] = f"operator {spec.op_id!r}"
    for name, owner in owners.items():
        if len(name.encode()) > _LONGEST_STORE_NAME:
            msg = (
                f"the store of {owner} is named {len(name.encode())} bytes long; keep it to "
                f"{_LONGEST_STORE_NAME} (it names the store's folder and its changelog stream): "
                "use a shorter op_id, table name or app name"
            )
            raise PlanError(msg)
