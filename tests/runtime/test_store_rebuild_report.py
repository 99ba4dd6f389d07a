"""A corrupt store's rebuild is logged: one warning per store, naming it, its task and what
RocksDB found (issue 43)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local

CONFIG = {"task.max.epoch.messages": "100"}


def test_each_corrupt_store_is_rebuilt_with_one_warning_naming_store_task_and_finding(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = generate_page_views(900, seed=9)
    write_page_views(system, events[:600], end=False)
    app = build_app(system, name="corrupt-report")
    first = run_local(app, CONFIG, until=4, clock=StepClock())
    currents = sorted(Path(first.store_root).rglob("CURRENT"))
    corrupted = currents[:2]  # two of the stores; the others open as they are
    assert len(currents) > len(corrupted)
    for current in corrupted:
        current.write_bytes(b"MANIFEST-9999")  # points at a manifest that does not exist
    system.write("page-views", events[600:])
    system.end_stream("page-views")
    with caplog.at_level(logging.WARNING, logger="samza_nb.runtime.processor.processor"):
        job = run_local(app, CONFIG, clock=StepClock())
    assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
    warnings = [r.getMessage() for r in caplog.records if "is rebuilt from its changelog" in r.getMessage()]
    assert len(warnings) == len(corrupted), warnings
    found = {(w.split("store ")[1].split(" of task")[0], w.split("of task ")[1].split(" is rebuilt")[0]) for w in warnings}
    assert found == {(repr(c.parent.name), repr(c.parent.parent.name.replace("_", " "))) for c in corrupted}
    for warning in warnings:
        assert warning.startswith("processor 0: store ") and "\n" not in warning
        assert "RocksDB could not open" in warning and "Corruption: CURRENT file does not end with newline" in warning
    assert len(job.metrics()["rebuilt_stores"]) == len(corrupted)
