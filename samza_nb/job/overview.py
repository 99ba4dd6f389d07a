"""What ``job.show()`` returns: the latest messages of a stream or operator, and the job at a
glance (state, per-operator trouble, lag per task and partition, the latest output messages).

Plain values with ``_repr_html_`` (tables with inline styles, readable in light and dark
themes) and a terminal ``__repr__``; ``%samza show`` keeps them live in a widget.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from samza_nb.plan.serdes import KVSerde
from samza_nb.runtime.plan_systems import system_of
from samza_nb.systems.base import MessageKind

if TYPE_CHECKING:
    from samza_nb.job.charts import LagHeatmap
    from samza_nb.job.status import JobStatus
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["JobOverview", "LatestMessages", "latest_stream_messages"]

_TEXT = "var(--jp-content-font-color1,#24292f)"
_CELL = (
    "border:1px solid var(--jp-border-color2,#d0d7de);padding:2px 8px;text-align:left;"
    f"vertical-align:top;font-size:12px;color:{_TEXT}"
)
_HEAD = _CELL + ";background:var(--jp-layout-color2,#f6f8fa);font-weight:600"


def _table(headers: list[str], rows: list[list[str]], caption: str) -> str:
    head = "".join(f'<th style="{_HEAD}">{html.escape(h)}</th>' for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{html.escape(c)}</td>' for c in row) + "</tr>"
        for row in rows
    )
    return (
        f'<table style="border-collapse:collapse;margin:4px 0 8px;color:{_TEXT}">'
        f'<caption style="text-align:left;font-weight:600;padding:2px 0">{html.escape(caption)}'
        f"</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _lenient(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return bytes(data)


@dataclass
class LatestMessages:
    """The latest messages of a stream (read back from its system) or of an operator (sampled
    inside the tasks). ``rows``: dicts with partition, offset, key and value for a stream,
    with the message's text for an operator; oldest first."""

    target: str
    kind: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    def _repr_html_(self) -> str:
        headers = list(self.rows[0]) if self.rows else ["message"]
        rows = [[str(row.get(h, "")) for h in headers] for row in self.rows]
        caption = f"latest {len(self.rows)} messages of {self.kind} {self.target}"
        note = f"<p style='color:{_TEXT};font-size:12px'>{html.escape(self.note)}</p>" if self.note else ""
        return _table(headers, rows, caption) + note

    def to_text(self) -> str:
        """The same table as :meth:`_repr_html_`, as text (columns padded to their widest cell)."""
        headers = list(self.rows[0]) if self.rows else ["message"]
        cells = [headers, *([str(row.get(h, "")) for h in headers] for row in self.rows)]
        widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
        lines = [f"latest {len(self.rows)} messages of {self.kind} {self.target}"]
        lines += ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in cells]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"LatestMessages({self.kind} {self.target!r}, {len(self.rows)} messages)"


def latest_stream_messages(plan: ExecutionPlan, stream_id: str, n: int) -> LatestMessages:
    """The last ``n`` user messages of a stream: by timestamp when the messages have one, else
    the newest of every partition in turn; oldest first."""
    info = plan.streams[stream_id]
    system = system_of(plan, stream_id)
    serde = info.serde
    if isinstance(serde, KVSerde):
        decode_key, decode_value = serde.key_serde.from_bytes, serde.value_serde.from_bytes
    else:
        decode_key, decode_value = _lenient, serde.from_bytes
    newest = system.newest_offsets(stream_id)
    oldest = system.oldest_offsets(stream_id)
    found: list[tuple[int, int, int, int, Any, Any]] = []
    for partition, end in sorted(newest.items()):
        # A few control messages may sit among the last n offsets: read a little more.
        start = max(oldest.get(partition, 0), end - n - 8)
        mine: list[tuple[int, int, int, Any, Any]] = []
        offset = start
        while offset < end:
            fetched = system.fetch(stream_id, partition, offset, end, end - offset)
            for first, records in fetched.batches:
                for index, (kind, key, value, timestamp) in enumerate(records):
                    if kind == MessageKind.USER:
                        decoded_key = decode_key(key) if key is not None else None
                        mine.append((timestamp or 0, partition, first + index, decoded_key, decode_value(value)))
            if fetched.next_offset <= offset:
                break
            offset = fetched.next_offset
        # Rank from the newest: a partition's last message has rank 0.
        found.extend((rank, *item) for rank, item in enumerate(reversed(mine[-n:])))
    if any(item[1] for item in found):
        chosen = sorted(found, key=lambda item: (item[1], item[2], item[3]))[-n:]
    else:
        # No timestamps to compare partitions by: the newest of every partition, in turn.
        chosen = sorted(found, key=lambda item: (item[0], item[2]))[:n]
    chosen.sort(key=lambda item: (item[1], item[2], item[3]))
    rows = [
        {"partition": partition, "offset": offset, "key": key, "value": value}
        for _rank, _ts, partition, offset, key, value in chosen
    ]
    note = "" if rows else "nothing stored (not written yet, or deleted by retention once consumed)"
    return LatestMessages(stream_id, f"{info.kind} stream", rows, note)


@dataclass
class JobOverview:
    """The job at a glance: ``status``, the ``heatmap`` of lag, and the latest messages of
    each output (``outputs``)."""

    app_name: str
    status: JobStatus
    heatmap: LagHeatmap
    outputs: list[LatestMessages]
    spark_ui: str | None = None

    def _repr_html_(self) -> str:
        link = (
            f'<p style="font-size:12px">Spark UI: <a href="{html.escape(self.spark_ui)}" '
            f'target="_blank">{html.escape(self.spark_ui)}</a></p>'
            if self.spark_ui
            else ""
        )
        return (
            f'<div class="samza-job-overview" style="color:{_TEXT}">'
            f"<p><b>{html.escape(self.app_name)}</b></p>{self.status._repr_html_()}{link}"
            f"{self.heatmap._repr_html_()}{''.join(o._repr_html_() for o in self.outputs)}</div>"
        )

    def to_text(self) -> str:
        """The status, the lag and each output's latest messages, as text."""
        parts = [repr(self.status), repr(self.heatmap), *(output.to_text() for output in self.outputs)]
        if self.spark_ui:
            parts.append(f"Spark UI: {self.spark_ui}")
        return "\n".join(parts)

    def __repr__(self) -> str:
        return f"JobOverview({self.app_name!r}, {self.status!r}, {self.heatmap!r})"
