"""A changelog compaction that fails: logged, counted in the metrics, tried again; the job goes on."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from samza_nb.examples.user_counts import (
    build_app,
    expected_totals,
    generate_events,
    totals_of,
    write_events,
)
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local


def test_a_failed_compaction_is_reported_and_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path / "home"))
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = generate_events(2_400, users=60)  # 40 updates per key
    write_events(system, events, partitions=2)
    calls: list[tuple[str, int]] = []
    compact = EmbeddedSystem.compact

    def first_one_fails(self: EmbeddedSystem, stream_id: str, partition: int, *args: Any, **kwargs: Any) -> Any:
        calls.append((stream_id, partition))
        if len(calls) == 1:
            msg = "disk quota exceeded"
            raise OSError(msg)
        return compact(self, stream_id, partition, *args, **kwargs)

    monkeypatch.setattr(EmbeddedSystem, "compact", first_one_fails)
    config = {"task.max.epoch.messages": "200", "job.changelog.compaction.min.messages": "50"}
    with caplog.at_level(logging.WARNING, logger="samza_nb.runtime.processor.compaction"):
        job = run_local(build_app(system, partitions=2), config, until="end-of-stream")
        job._processors["0"].compactor.join()
    assert job.status().state == "finished"
    assert totals_of(job.collect("user-counts")) == expected_totals(events)
    failed_stream, failed_partition = calls[0]
    report = job.metrics()["changelog_compaction"]
    assert report["failures"] == 1
    assert f"changelog {failed_stream!r} partition {failed_partition}" in report["last_failure"]
    assert "OSError: disk quota exceeded" in report["last_failure"]
    assert any("disk quota exceeded" in r.getMessage() and failed_stream in r.getMessage() for r in caplog.records)
    # Tried again: the partition that failed was compacted by a later pass.
    later = job._processors["0"].compactor.results
    assert report["compactions"] == len(later) > 0
    assert any(r.stream == failed_stream and r.partition == failed_partition for r in later)
