"""The processor table: heartbeats and membership (SAMZA.md §10.2, Samza's ProcessorEntity).

One row per processor and job-model version: PartitionKey = the version the processor works on
(the literal ``UNASSIGNED`` before its first), RowKey = the processor id, ``isLeader``, and
``liveness``, a random number rewritten by every heartbeat so the row's server Timestamp
changes. A row is *live* while that Timestamp is younger than the freshness window, measured on
the server's clock only: "now" is the Date of the server's response to a write made for the
purpose (a ``~clock`` row, rewritten), never this machine's clock, so a skewed local clock
neither keeps a dead processor live nor drops a live one. The Date has whole seconds (it is
truncated), so a row may count as live up to a second longer than the window. The row also
carries the processor's ``locationId`` and ``runId``, so the leader groups over live processors *with* their
locations (host affinity), which Samza's table cannot.

It also carries the ``incarnation`` of the process behind the id (when it started, then a random
part): processor ids are the user's ``processor.id`` and outlive a process, so a processor
restarted under its id is told apart from the one before it.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from samza_nb.errors import CoordinationError
from samza_nb.metadata.azure_storage import describe_error

__all__ = ["UNASSIGNED", "ProcessorRow", "ProcessorTable", "new_incarnation"]

UNASSIGNED = "UNASSIGNED"
#: The PartitionKey and RowKey of the row whose writes tell the server's time.
_CLOCK = "~clock"


def new_incarnation() -> str:
    """A process's incarnation: its start time in nanoseconds (zero-padded, so later ones sort
    after earlier ones) and a random part."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class ProcessorRow:
    version: str
    processor_id: str
    is_leader: bool
    location_id: str
    timestamp: datetime
    run_id: str = ""
    incarnation: str = ""

    def age(self, now: datetime) -> float:
        """Seconds since the last heartbeat at ``now`` (:meth:`ProcessorTable.server_now`)."""
        return (now - self.timestamp).total_seconds()


class ProcessorTable:
    """The rows of one job's table (``table``: a TableClient)."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def __repr__(self) -> str:
        return f"ProcessorTable({self.table.table_name})"

    def _error(self, what: str, error: BaseException) -> CoordinationError:
        return CoordinationError(f"{self!r}: {what}: {describe_error(error)}")

    def ensure(self) -> None:
        from azure.core.exceptions import AzureError, ResourceExistsError

        try:
            self.table.create_table()
        except ResourceExistsError:
            pass
        except AzureError as error:
            what = "create the table"
            raise self._error(what, error) from error

    def upsert(
        self,
        version: str,
        processor_id: str,
        *,
        is_leader: bool,
        location_id: str,
        run_id: str = "",
        incarnation: str = "",
    ) -> None:
        """Write (or refresh: a heartbeat) the row of ``processor_id`` in ``version``."""
        from azure.core.exceptions import AzureError
        from azure.data.tables import UpdateMode

        entity = {
            "PartitionKey": version,
            "RowKey": processor_id,
            "isLeader": is_leader,
            "liveness": random.randint(2, 10001),
            "locationId": location_id,
            "runId": run_id,
            "incarnation": incarnation,
        }
        try:
            self.table.upsert_entity(entity, mode=UpdateMode.REPLACE)
        except AzureError as error:
            what = f"write the row of {processor_id!r} in {version}"
            raise self._error(what, error) from error

    def delete(self, version: str, processor_id: str) -> None:
        """Remove a row (forced: no etag check); a missing row is fine."""
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        try:
            self.table.delete_entity(partition_key=version, row_key=processor_id)
        except ResourceNotFoundError:
            pass
        except AzureError as error:
            what = f"delete the row of {processor_id!r} in {version}"
            raise self._error(what, error) from error

    def server_now(self) -> datetime:
        """The server's time now: the Date of its response to a write of the clock row."""
        from azure.core.exceptions import AzureError
        from azure.data.tables import UpdateMode

        try:
            response = self.table.upsert_entity({"PartitionKey": _CLOCK, "RowKey": _CLOCK}, mode=UpdateMode.REPLACE)
        except AzureError as error:
            what = "read the server's time"
            raise self._error(what, error) from error
        date = response.get("date")  # a datetime parsed from the Date header
        if date is None:
            msg = f"{self!r}: the server's response to a write carries no Date header"
            raise CoordinationError(msg)
        return date if date.tzinfo is not None else date.replace(tzinfo=UTC)

    def rows(self, processor_id: str | None = None) -> list[ProcessorRow]:
        """Every row, or every row of ``processor_id`` (none while the table does not exist)."""
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        try:
            if processor_id is None:
                entities = list(self.table.list_entities())
            else:
                entities = list(self.table.query_entities("RowKey eq @id", parameters={"id": processor_id}))
        except ResourceNotFoundError:
            return []
        except AzureError as error:
            what = "list the processors" if processor_id is None else f"read the rows of {processor_id!r}"
            raise self._error(what, error) from error
        return [
            ProcessorRow(
                str(e["PartitionKey"]),
                str(e["RowKey"]),
                bool(e.get("isLeader", False)),
                str(e.get("locationId") or ""),
                e.metadata["timestamp"],
                str(e.get("runId") or ""),
                str(e.get("incarnation") or ""),
            )
            for e in entities
            if e["PartitionKey"] != _CLOCK
        ]

    def live(self, freshness: float) -> list[ProcessorRow]:
        """Rows younger than ``freshness`` seconds on the server's clock, newest row per
        processor."""
        rows = self.rows()
        if not rows:
            return []
        now = self.server_now()
        newest: dict[str, ProcessorRow] = {}
        for row in rows:
            if row.age(now) <= freshness:
                known = newest.get(row.processor_id)
                if known is None or row.timestamp > known.timestamp:
                    newest[row.processor_id] = row
        return sorted(newest.values(), key=lambda r: r.processor_id)
