"""The words and table rows of the grouper explorer's view: its summary, the note next to
Apply, the checks, and the rows of the model, move and standby tables, all read from the
explorer's state (notebook/widgets/grouper_explorer.py draws them)."""

from __future__ import annotations

import re

import ipywidgets as widgets

from samza_nb.grouping import Balance, Move, active_task_name
from samza_nb.model import JobModel, TaskMode, java_sorted
from samza_nb.notebook.widgets._html import count
from samza_nb.notebook.widgets._live import LiveWidget

__all__ = ["GrouperExplorerText", "in_explorer_words"]

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


class GrouperExplorerText(LiveWidget):
    """The text parts of :class:`~samza_nb.notebook.widgets.grouper_explorer.GrouperExplorer`."""

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
    grouper: widgets.Dropdown
    replication_factor: widgets.IntSlider

    def _summary_text(self) -> str:
        tasks = len(self.current.active_tasks())
        if self.error is not None:
            return f"{self.grouper.value} over {len(self.draft)} processors: cannot group ({self.error})"
        b = self.balance
        # The lower bound is that of balanced assignments: an unbalanced one may move fewer.
        bound = (
            f" (any balanced assignment moves at least {self.lower_bound})" if b.is_balanced else ""
        )
        return (
            f"{self.grouper.value} over {len(self.draft)} processors: {len(self.moves)} of {tasks} "
            f"tasks move{bound}; {b.min}–{b.max} active tasks per processor "
            f"({'balanced' if b.is_balanced else 'unbalanced'})"
        )

    def _apply_notes(self, blocker: str | None) -> list[str]:
        """Next to Apply: why it is off, else what it does with standbys (never both: a note
        saying what Apply would do beside a disabled Apply reads as an invitation)."""
        if blocker is not None:
            return [f"Apply is off: {blocker}"]
        if self.error is not None:
            return []  # nothing to preview: the summary says why
        note = self._apply_note_text()
        return [note] if note else []

    def _apply_note_text(self) -> str:
        replicas = self.replication_factor.value
        if replicas == 1:
            return ""
        if self.job is not None:
            return (
                f"Apply sets replication factor {replicas} on the running job: its processors "
                "run the standby tasks shown (placed the SEP's standalone way, whatever the grouper)"
            )
        return (
            "Apply leaves standbys out: the job runs no standby tasks, so Apply applies the "
            f"active tasks only; the standbys shown (replication factor {replicas}) are a preview"
        )

    def _checks_text(self) -> list[str]:
        if self.error is not None or self.active_proposal is None:
            return []
        replicas = self.replication_factor.value
        lines = (
            [f"✗ {violation}" for violation in self.violations]
            if self.violations
            else [f"✓ every standby invariant holds (replication factor {replicas})"]
        )
        return lines

    def _model_rows(self) -> list[list[str]]:
        if self.proposal is None:
            return []
        moved_in: dict[str, int] = {}
        moved_out: dict[str, int] = {}
        for move in self.moves:
            if move.after is not None:
                moved_in[move.after] = moved_in.get(move.after, 0) + 1
            if move.before is not None:
                moved_out[move.before] = moved_out.get(move.before, 0) + 1
        rows = []
        for pid, container in self.proposal.containers.items():
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
            for pid in self.current_processors
            if pid not in self.draft and pid not in self.proposal.containers
        )
        for pid in java_sorted(killed):
            rows.append(
                [
                    f"{pid} (killed)",
                    self.current_processors[pid],
                    "0",
                    "0",
                    count(moved_out.get(pid, 0)),
                    "",
                    "",
                ]
            )
        return rows

    def _move_rows(self) -> list[list[str]]:
        def location(model: JobModel | None, pid: str | None) -> str:
            container = None if model is None or pid is None else model.containers.get(pid)
            return (container.location_id if container else None) or "–"

        return [
            [
                move.task,
                move.before or "–",
                move.after or "–",
                location(self.current, move.before),
                location(self.proposal, move.after),
            ]
            for move in self.moves
        ]

    def _standby_rows(self) -> list[list[str]]:
        if self.proposal is None or self.replication_factor.value == 1:
            return []
        standbys: dict[str, list[str]] = {}
        for pid, container in self.proposal.containers.items():
            for name in container.standby_tasks():
                active = active_task_name(name)
                place = f"{pid}@{container.location_id}" if container.location_id else pid
                standbys.setdefault(active, []).append(place)
        return [
            [name, pid, ", ".join(standbys.get(name, [])) or "–"]
            for name, pid in self.proposal.task_to_processor(mode=TaskMode.ACTIVE).items()
        ]
