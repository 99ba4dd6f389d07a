"""Counters of a job, summed from its tasks' epoch results: per task, stream and operator."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from samza_nb.runtime.epoch import EpochResult

__all__ = ["JobMetrics"]


def _empty_task_metrics() -> dict[str, Any]:
    return {
        "messages_in": 0, "messages_out": 0, "epochs": 0, "epoch_seconds": 0.0, "restores": 0,
        "full_restores": 0, "restored_records": 0, "restored_bytes": 0, "restore_seconds": 0.0, "skipped": 0, "last_epoch_restores": 0,
    }


class JobMetrics:
    """Thread-safe sums of epoch results (every processor of a process records here)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, dict[str, Any]] = {}
        self._streams: dict[str, dict[str, int]] = {}
        self._operators: dict[str, int] = {}
        self._skipped: dict[str, int] = {}
        self._dropped: dict[str, int] = {}
        self.rebuilt_stores: list[str] = []
        self.deleted_unread: list[str] = []

    def record(self, results: Iterable[EpochResult]) -> None:
        with self._lock:
            for result in results:
                self._record(result)

    def _record(self, result: EpochResult) -> None:
        task = self._tasks.setdefault(result.task_name, _empty_task_metrics())
        task["messages_in"] += sum(result.messages_in.values())
        task["messages_out"] += sum(result.messages_out.values())
        task["epochs"] += 1
        task["epoch_seconds"] = result.seconds
        task["restores"] += result.restores
        task["full_restores"] += result.full_restores
        task["restored_records"] += result.restored_records
        task["restored_bytes"] += result.restored_bytes
        task["restore_seconds"] += result.restore_seconds
        task["skipped"] += result.skipped
        task["last_epoch_restores"] = result.restores
        for stream_id, count in result.messages_in.items():
            self._streams.setdefault(stream_id, {"in": 0, "out": 0})["in"] += count
        for stream_id, count in result.messages_out.items():
            self._streams.setdefault(stream_id, {"in": 0, "out": 0})["out"] += count
        for op_id, count in result.operator_counts.items():
            self._operators[op_id] = self._operators.get(op_id, 0) + count
        for op_id, count in result.operator_skipped.items():
            self._skipped[op_id] = self._skipped.get(op_id, 0) + count
        for op_id, count in result.operator_dropped.items():
            self._dropped[op_id] = self._dropped.get(op_id, 0) + count
        self.rebuilt_stores.extend(result.rebuilt)
        self.deleted_unread.extend(result.deleted_unread)

    def stream_counts(self) -> dict[str, dict[str, int]]:
        """Per stream: messages read (``in``) and written (``out``) so far."""
        with self._lock:
            return {stream_id: dict(counts) for stream_id, counts in self._streams.items()}

    def operator_counters(self, failed_op: str | None = None) -> dict[str, dict[str, int]]:
        """Per operator: messages in, ``skipped`` after an error (``task.errors.skip``),
        ``dropped`` (a map or flat_map returning None, a message an event-time window got after
        the watermark passed its pane) and ``errors`` (the skipped ones plus
        the one that failed the job, ``failed_op``)."""
        with self._lock:
            counters = {
                op_id: {
                    "in": count,
                    "skipped": self._skipped.get(op_id, 0),
                    "dropped": self._dropped.get(op_id, 0),
                    "errors": self._skipped.get(op_id, 0) + int(op_id == failed_op),
                }
                for op_id, count in self._operators.items()
            }
        if failed_op is not None and failed_op not in counters:
            counters[failed_op] = {"in": 0, "skipped": 0, "dropped": 0, "errors": 1}
        return counters

    def restore_of(self, task: str) -> dict[str, Any]:
        """A task's store restores so far: count, records, bytes, seconds."""
        with self._lock:
            entry = self._tasks.get(task) or _empty_task_metrics()
            return {
                "restores": entry["restores"],
                "records": entry["restored_records"],
                "bytes": entry["restored_bytes"],
                "seconds": entry["restore_seconds"],
            }

    def snapshot(
        self,
        tasks: Iterable[str],
        streams: Mapping[str, str],
        task_lags: Mapping[str, int],
        stream_lags: Mapping[str, int],
        epochs: int,
        failed_op: str | None = None,
    ) -> dict[str, Any]:
        """The metrics dict of :meth:`Job.metrics` (``streams``: stream id → kind;
        ``failed_op``: the operator whose error failed the job)."""
        counters = self.operator_counters(failed_op)
        with self._lock:
            stream_entries: dict[str, dict[str, int]] = {}
            for stream_id, kind in streams.items():
                entry = dict(self._streams.get(stream_id, {"in": 0, "out": 0}))
                if kind != "output":
                    entry["lag"] = stream_lags.get(stream_id, 0)
                stream_entries[stream_id] = entry
            return {
                "tasks": {
                    task: {**self._tasks.get(task, _empty_task_metrics()), "lag": task_lags.get(task, 0)}
                    for task in sorted(tasks)
                },
                "streams": stream_entries,
                "operators": dict(self._operators),
                "operator_counters": counters,
                "epochs": epochs,
                "rebuilt_stores": list(self.rebuilt_stores),
                "deleted_unread": list(self.deleted_unread),
            }
