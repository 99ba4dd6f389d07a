"""The words and tables of the grouper explorer's view: its summary, the note next to Apply,
the checks, and the model, move and standby tables (HTML and text), all read from the
explorer's state (notebook/widgets/grouper_explorer.py shows them)."""

from __future__ import annotations

import re
from typing import Any, Protocol

from samza_nb.grouping import Balance, Move, active_task_name
from samza_nb.model import JobModel, TaskMode, java_sorted
from samza_nb.notebook.widgets._html import count, html_table, text_table

__all__ = ["ExplorerState", "ExplorerText", "in_explorer_words"]

_MODEL_HEADERS = [
    "processor", "location", "active", "moved in", "moved out", "active tasks", "standby tasks",
]
_MOVE_HEADERS = ["task", "from", "to", "from location", "to location"]
_STANDBY_HEADERS = ["task", "active on", "standbys on"]

#: The explorer's control for ``check_location``.
_LOCATION_BOX = "“standbys on other locations”"
_REWORDINGS = (
    # A grouping function's name before its message (``assign_with_standbys: …``).
    (re.compile(r"^[a-z]+(?:_[a-z]+)+: "), ""),
    (
        re.compile(r" \(a direct call of \w+ can pass check_location=False to ([^)]*)\)"),
        rf" (or untick {_LOCATION_BOX} to \1)",
    ),
    (re.compile(r"check_location=False"), f"{_LOCATION_BOX} unticked"),
    (re.compile(r"job\.standbytasks\.replication\.factor"), "the replication factor"),
)


def in_explorer_words(message: str) -> str:
    """A grouping error as the explorer's user reads it: no function or parameter names, the
    explorer's own controls instead."""
    for pattern, replacement in _REWORDINGS:
        message = pattern.sub(replacement, message)
    return message


class ExplorerState(Protocol):
    """What the text reads of a grouper explorer (its attributes)."""

    job: Any
    current: JobModel
    current_processors: dict[str, str]
    draft: dict[str, str]
    proposal: JobModel | None
    active_proposal: JobModel | None
    moves: list[Move]
    balance: Balance
    lower_bound: int
    violations: list[str]
    error: str | None
    grouper: Any  # a Dropdown: .value is the grouper's name
    replication_factor: Any  # an IntSlider: .value is the factor


class ExplorerText:
    """The words and table rows of a :class:`~samza_nb.notebook.widgets.grouper_explorer.GrouperExplorer`,
    read from its state (its current model and processors, the draft, the proposal and what
    was computed of it)."""

    def __init__(self, explorer: ExplorerState) -> None:
        self._explorer = explorer

    def summary(self) -> str:
        e = self._explorer
        tasks = len(e.current.active_tasks())
        if e.error is not None:
            return f"{e.grouper.value} over {len(e.draft)} processors: cannot group ({e.error})"
        b = e.balance
        # The lower bound is that of balanced assignments: an unbalanced one may move fewer.
        bound = (
            f" (any balanced assignment moves at least {e.lower_bound})" if b.is_balanced else ""
        )
        return (
            f"{e.grouper.value} over {len(e.draft)} processors: {len(e.moves)} of {tasks} "
            f"tasks move{bound}; {b.min}–{b.max} active tasks per processor "
            f"({'balanced' if b.is_balanced else 'unbalanced'})"
        )

    def apply_notes(self, blocker: str | None) -> list[str]:
        """Next to Apply: why it is off, else what it does with standbys (never both: a note
        saying what Apply would do beside a disabled Apply reads as an invitation)."""
        e = self._explorer
        if blocker is not None:
            return [f"Apply is off: {blocker}"]
        if e.error is not None:
            return []  # nothing to preview: the summary says why
        note = self._apply_note()
        return [note] if note else []

    def _apply_note(self) -> str:
        e = self._explorer
        replicas = e.replication_factor.value
        if replicas == 1:
            return ""
        if e.job is not None:
            return (
                f"Apply sets replication factor {replicas} on the running job: its processors "
                "run the standby tasks shown (placed the SEP's standalone way, whatever the grouper)"
            )
        return (
            "Apply leaves standbys out: the job runs no standby tasks, so Apply applies the "
            f"active tasks only; the standbys shown (replication factor {replicas}) are a preview"
        )

    def checks(self) -> list[str]:
        e = self._explorer
        if e.error is not None or e.active_proposal is None:
            return []
        replicas = e.replication_factor.value
        lines = (
            [f"✗ {violation}" for violation in e.violations]
            if e.violations
            else [f"✓ every standby invariant holds (replication factor {replicas})"]
        )
        return lines

    def model_rows(self) -> list[list[str]]:
        e = self._explorer
        if e.proposal is None:
            return []
        moved_in: dict[str, int] = {}
        moved_out: dict[str, int] = {}
        for move in e.moves:
            if move.after is not None:
                moved_in[move.after] = moved_in.get(move.after, 0) + 1
            if move.before is not None:
                moved_out[move.before] = moved_out.get(move.before, 0) + 1
        rows = []
        for pid, container in e.proposal.containers.items():
            active = container.active_tasks()
            rows.append(
                [
                    pid,
                    container.location_id or "–",
                    count(len(active)),
                    count(moved_in.get(pid, 0)),
                    count(moved_out.get(pid, 0)),
                    ", ".join(active),
                    ", ".join(container.standby_tasks()),
                ]
            )
        killed = (
            pid
            for pid in e.current_processors
            if pid not in e.draft and pid not in e.proposal.containers
        )
        for pid in java_sorted(killed):
            rows.append(
                [
                    f"{pid} (killed)",
                    e.current_processors[pid],
                    "0",
                    "0",
                    count(moved_out.get(pid, 0)),
                    "",
                    "",
                ]
            )
        return rows

    def move_rows(self) -> list[list[str]]:
        e = self._explorer
        def location(model: JobModel | None, pid: str | None) -> str:
            container = None if model is None or pid is None else model.containers.get(pid)
            return (container.location_id if container else None) or "–"

        return [
            [
                move.task,
                move.before or "–",
                move.after or "–",
                location(e.current, move.before),
                location(e.proposal, move.after),
            ]
            for move in e.moves
        ]

    def standby_rows(self) -> list[list[str]]:
        e = self._explorer
        if e.proposal is None or e.replication_factor.value == 1:
            return []
        standbys: dict[str, list[str]] = {}
        for pid, container in e.proposal.containers.items():
            for name in container.standby_tasks():
                active = active_task_name(name)
                place = f"{pid}@{container.location_id}" if container.location_id else pid
                standbys.setdefault(active, []).append(place)
        return [
            [name, pid, ", ".join(standbys.get(name, [])) or "–"]
            for name, pid in e.proposal.task_to_processor(mode=TaskMode.ACTIVE).items()
        ]

    def model_table_html(self) -> str:
        return html_table(_MODEL_HEADERS, self.model_rows(), caption="proposed JobModel")

    def moves_table_html(self) -> str:
        """The moved tasks' table ("" when none moves)."""
        if not self._explorer.moves:
            return ""
        return html_table(_MOVE_HEADERS, self.move_rows(), caption="moved tasks")

    def standby_table_html(self) -> str:
        """The standbys' placement ("" without standbys)."""
        rows = self.standby_rows()
        return html_table(_STANDBY_HEADERS, rows, caption="standby placement") if rows else ""

    def snapshot(self, blocker: str | None) -> str:
        """The whole view as text (a saved notebook's plain output): summary, checks, the
        notes next to Apply (``blocker``: why Apply is off, if it is), the tables."""
        parts = [f"GrouperExplorer: {self.summary()}", *("  " + line for line in self.checks())]
        parts += [f"  {note}" for note in self.apply_notes(blocker)]
        parts += self.tables_text()
        return "\n".join(parts)

    def tables_text(self) -> list[str]:
        """The model, move and standby tables as text (the ones there are)."""
        tables = [text_table(_MODEL_HEADERS, self.model_rows())]
        if self._explorer.moves:
            tables.append(text_table(_MOVE_HEADERS, self.move_rows()))
        standby_rows = self.standby_rows()
        if standby_rows:
            tables.append(text_table(_STANDBY_HEADERS, standby_rows))
        return tables
