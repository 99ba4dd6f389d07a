"""Processor liveness on Azure is measured on the server's clock only (Azurite's): a local clock
hours off (``time.time`` and the module's ``datetime.now`` skewed) neither drops a processor
that heartbeats nor keeps one that stopped."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from samza_nb.coordination.azure import processors
from samza_nb.coordination.azure.processors import UNASSIGNED, ProcessorTable
from samza_nb.metadata.azure_storage import AzureAccount
from samza_nb.testing import unique_name

pytestmark = pytest.mark.services


@pytest.fixture
def table(azure_connection_string: str) -> Iterator[ProcessorTable]:
    service = AzureAccount(azure_connection_string).table_service()
    client = service.get_table_client("t" + unique_name().replace("-", "")[:30])
    rows = ProcessorTable(client)
    rows.ensure()
    yield rows
    client.delete_table()
    service.close()


def _skew_local_clock(monkeypatch: pytest.MonkeyPatch, skew: timedelta) -> None:
    real_time = time.time

    class SkewedDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return datetime.now(tz) + skew

    monkeypatch.setattr(time, "time", lambda: real_time() + skew.total_seconds())
    monkeypatch.setattr(processors, "datetime", SkewedDatetime)


@pytest.mark.parametrize("skew", [timedelta(hours=2), timedelta(hours=-2)])
def test_a_skewed_local_clock_does_not_change_who_is_live(
    table: ProcessorTable, monkeypatch: pytest.MonkeyPatch, skew: timedelta
) -> None:
    table.upsert(UNASSIGNED, "stopped", is_leader=False, location_id="host-a")
    time.sleep(3.5)  # past a 2 s window on any clock, plus the Date header's whole second
    table.upsert(UNASSIGNED, "beating", is_leader=False, location_id="host-b")
    _skew_local_clock(monkeypatch, skew)
    assert abs(time.time() - datetime.now(UTC).timestamp() - skew.total_seconds()) < 5
    assert [row.processor_id for row in table.live(2.0)] == ["beating"]
    server = table.server_now()
    assert abs((server - datetime.now(UTC)).total_seconds()) < 5  # the real clock, not the skewed one
    assert [row.processor_id for row in table.rows()] == ["beating", "stopped"]  # not the clock row
