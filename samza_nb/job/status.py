"""What a job shows of itself: JobStatus, ProcessorStatus and the DrainStates view.

Plain values built by the Job handle from its processors; each draws itself in a notebook
(``_repr_html_``) and reads well in a terminal.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from samza_nb.model import SystemStreamPartition

__all__ = ["DrainStatesView", "JobStatus", "ProcessorStatus"]


@dataclass
class ProcessorStatus:
    processor_id: str
    location_id: str
    tasks: list[str]
    state: str


@dataclass
class JobStatus:
    """A snapshot of a job: its state, epoch, processors and per-task progress."""

    state: str
    epoch: int
    run_id: str
    processors: dict[str, ProcessorStatus] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None
    #: Operators that skipped, dropped or failed on messages: op id → skipped, dropped, errors.
    operators: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Consumer lag per input partition: one dict per (stream, partition) with the task reading
    #: it, the committed offset, the newest offset and ``lag`` (messages not read yet,
    #: control messages left out).
    partitions: list[dict[str, Any]] = field(default_factory=list)

    def lag_frame(self) -> Any:
        """:attr:`partitions` as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.partitions, columns=["stream", "partition", "task", "committed", "newest", "lag"])
    #: Hot standby tasks by name: active, processor, location, lag_records, lag_epochs,
    #: applied_records (runtime/processor/standby.py).
    standbys: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Standby tasks the replication factor asks for that no location could take.
    unassigned_standbys: int = 0

    @property
    def done(self) -> bool:
        return self.state in ("finished", "stopped", "failed", "drained")

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{task.get('epochs', 0)}</td>"
            f"<td>{task.get('lag', 0):,}</td><td>{'done' if task.get('done') else ''}</td></tr>"
            for name, task in self.tasks.items()
        )
        processors = "; ".join(
            f"{html.escape(p.processor_id)} at {html.escape(p.location_id)} ({p.state})"
            for p in self.processors.values()
        )
        error = f"<p style='color:#cf222e'>{html.escape(self.error)}</p>" if self.error else ""
        troubled = "".join(
            f"<tr><td>{html.escape(op_id)}</td><td>{c['skipped']:,}</td><td>{c['dropped']:,}</td>"
            f"<td>{c['errors']:,}</td></tr>"
            for op_id, c in self.operators.items()
        )
        operators = (
            "<table><thead><tr><th>operator</th><th>skipped</th><th>dropped (None)</th>"
            f"<th>errors</th></tr></thead><tbody>{troubled}</tbody></table>"
            if troubled
            else ""
        )
        lags = "".join(
            f"<tr><td>{html.escape(row['stream'])}[{row['partition']}]</td>"
            f"<td>{html.escape(row['task'])}</td><td>{row['committed']:,}</td>"
            f"<td>{row['newest']:,}</td><td>{row['lag']:,}</td></tr>"
            for row in self.partitions
        )
        lag_table = (
            "<table><thead><tr><th>input partition</th><th>task</th><th>committed</th>"
            f"<th>newest</th><th>lag</th></tr></thead><tbody>{lags}</tbody></table>"
            if lags
            else ""
        )
        return self._main_html(processors, error, rows, operators + lag_table) + self._standby_html()

    def _standby_html(self) -> str:
        if not self.standbys and not self.unassigned_standbys:
            return ""
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{html.escape(str(s['processor']))}</td>"
            f"<td>{html.escape(str(s['location']))}</td><td>{s['lag_records']:,}</td>"
            f"<td>{s['lag_epochs']}</td></tr>"
            for name, s in self.standbys.items()
        )
        unassigned = (
            f"<p>{self.unassigned_standbys} standby task(s) unassigned (too few locations)</p>"
            if self.unassigned_standbys
            else ""
        )
        return (
            f"{unassigned}<table><thead><tr><th>standby</th><th>processor</th><th>location</th>"
            f"<th>lag (records)</th><th>lag (epochs)</th></tr></thead><tbody>{rows}</tbody></table>"
        )

    def _main_html(self, processors: str, error: str, rows: str, tables: str) -> str:
        return (
            f"<p><b>{html.escape(self.state)}</b> at epoch {self.epoch}, run "
            f"<code>{html.escape(self.run_id)}</code>; processors: {processors}</p>{error}"
            "<table><thead><tr><th>task</th><th>epochs</th><th>lag</th><th></th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{tables}"
        )

    def __repr__(self) -> str:
        finished = sum(1 for task in self.tasks.values() if task.get("done"))
        return (
            f"JobStatus(state={self.state!r}, epoch={self.epoch}, processors={len(self.processors)}, "
            f"tasks={len(self.tasks)} ({finished} done))"
        )


@dataclass
class DrainStatesView:
    """DrainStates of every task, as committed, plus their history epoch by epoch.

    ``rows``: one dict per (task, ssp) with drained, heard (upstream task names), expected and
    drained_epoch. ``history``: (epoch, rows) as they stood after the first epoch and after
    every epoch that changed a DrainState, oldest first.
    """

    rows: list[dict[str, Any]]
    history: list[tuple[int, list[dict[str, Any]]]]

    @classmethod
    def build(
        cls,
        history: list[dict[str, Any]],
        producer_counts: dict[str, int],
        task_ssps: dict[str, frozenset[SystemStreamPartition]],
    ) -> DrainStatesView:
        drained_at: dict[tuple[str, str], int] = {}
        snapshots: list[tuple[int, list[dict[str, Any]]]] = []
        for entry in history:
            rows = []
            for task, ssps in sorted(task_ssps.items()):
                drain = entry["control"].get(task, {}).get("drain", {})
                for ssp in sorted(ssps):
                    state = drain.get(str(ssp))
                    if state is None:
                        continue
                    key = (task, str(ssp))
                    if state["done"] and key not in drained_at:
                        drained_at[key] = entry["epoch"]
                    rows.append(
                        {
                            "task": task,
                            "ssp": str(ssp),
                            "stream": ssp.stream,
                            "partition": ssp.partition,
                            "drained": bool(state["done"]),
                            "heard": list(state["heard"]),
                            "expected": producer_counts.get(ssp.stream, 0),
                            "drained_epoch": drained_at.get(key),
                        }
                    )
            snapshots.append((entry["epoch"], rows))
        return cls(snapshots[-1][1] if snapshots else [], snapshots)

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    @property
    def all_drained(self) -> bool:
        return bool(self.rows) and all(row["drained"] for row in self.rows)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(row['task'])}</td><td>{html.escape(row['ssp'])}</td>"
            f"<td>{'✓' if row['drained'] else '–'}</td>"
            f"<td>{len(row['heard'])} of {row['expected']}</td>"
            f"<td>{'' if row['drained_epoch'] is None else row['drained_epoch']}</td></tr>"
            for row in self.rows
        )
        return (
            f"<p>{html.escape(repr(self))}</p><table><thead><tr><th>task</th><th>SSP</th>"
            "<th>drained</th><th>upstream drains</th><th>epoch</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )

    def __repr__(self) -> str:
        done = sum(1 for row in self.rows if row["drained"])
        return f"DrainStatesView({done} of {len(self.rows)} SSPs drained, {len(self.history)} epochs)"
