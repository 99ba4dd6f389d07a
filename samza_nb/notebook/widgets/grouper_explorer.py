"""GrouperExplorer: try a grouper, processors, locations and standbys before touching the job.

The explorer starts from a *current* JobModel (the job's, a given one, or one grouped from a
plan or task names) and keeps a *draft* of the live processors (processor id → location) that
the controls edit. The *proposal* is what applying the draft would give, computed with the
public grouping API exactly the way :meth:`GrouperExplorer.apply` changes the job
(grouper_proposal.py): one regroup of the draft's processors with the chosen grouper and the
current model as history (``GrouperMetadata.from_job_model``). With ``host-affinity`` and a
balanced current model every task of a processor that stays keeps its place,
so killing one processor moves exactly the tasks HostAffinityGrouper moves for that kill.

Kill and Add only edit the draft: the running job changes when Apply is clicked, never before,
so a kill can be tried and undone (Reset) at no cost to the job.

Standby tasks (replication factor > 1): with a job, the job's coordinator computes the proposal
with that replication factor and Apply sets it on the running job (its processors then run hot
standby tasks; runtime/processor/standby.py). Without a job they are a preview: with ``host-affinity``
they are placed the SEP's standalone way (:func:`assign_with_standbys`, never sharing a processor, nor a
location when "other locations" is ticked); with the other groupers Samza's YARN way
(:func:`add_standby_containers`, one container per replica, placed by the cluster manager).
While the replication factor is above 1 a note next to the Apply button says what Apply does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from samza_nb.errors import ConfigError, SamzaNbError
from samza_nb.grouping import (
    Balance,
    Move,
    grouper_names,
    moved_tasks,
    task_assignment,
)
from samza_nb.model import JobModel, TaskMode, TaskModel, java_sorted
from samza_nb.notebook.widgets._html import paragraph
from samza_nb.notebook.widgets._live import DEFAULT_INTERVAL, LiveWidget
from samza_nb.notebook.widgets.grouper_draft import ProcessorDraft
from samza_nb.notebook.widgets.grouper_explorer_text import ExplorerText, in_explorer_words
from samza_nb.notebook.widgets.grouper_inputs import (
    _processors_of,
    explorer_start,
    group,
    tasks_of_plan,
)
from samza_nb.notebook.widgets.grouper_proposal import propose
from samza_nb.plan.execution_plan import ExecutionPlan

if TYPE_CHECKING:
    from samza_nb.job.handle import Job

__all__ = ["GrouperExplorer", "group", "tasks_of_plan"]

_ERROR = "#cf222e"
_OK = "#1a7f37"
_WARN = "#9a6700"


class GrouperExplorer(LiveWidget):
    """Choose a grouper, processors, locations and replicas; see the assignment it gives.

    Start from a job (``GrouperExplorer(job)``; a job attached with ``%samza attach`` is
    shown with its current model and proposals, Apply off: "attached: preview only"), a
    JobModel (``job_model=``), a plan
    (``plan=``) or tasks (``tasks=`` a count or task names); without a job the current model
    groups the tasks with ``grouper`` over ``processors`` processors ``"0"``, ``"1"`` …
    at ``locations`` (cycled; by default one location per processor, ``host-<id>``).

    ``grouper`` is the one the dropdown starts on: by default the job's (``job.grouper``), and
    ``host-affinity`` without a job. While the dropdown shows the job's grouper, proposals and
    Apply use the job's ``grouper_options`` too, as ``job.rebalance()`` would.

    Controls (ipywidgets): ``grouper`` (Dropdown of registry names), ``processors``
    (BoundedIntText; growing adds processors, shrinking kills the highest ids), ``locations``
    (Text, comma-separated, one per processor in id order and cycled; read-only with a job,
    whose processors cannot move), ``replication_factor`` (IntSlider; the job's to begin with),
    ``check_location``
    (Checkbox), ``kill_choice`` (Dropdown) with ``kill_button``, ``new_location`` (Text; blank
    gives a location of its own, ``host-<id>``) with ``add_button``, ``apply_button``
    (disabled without a job) with ``apply_note`` (HTML; while the replication factor is above
    1 it says that Apply sets it on the running job) and ``reset_button``.

    Results: ``current`` (JobModel), ``current_processors`` and ``draft`` (processor id →
    location), ``proposal`` (JobModel with standbys when replication_factor > 1, None when the
    draft cannot be grouped), ``active_proposal``, ``moves`` (active tasks changing processor,
    a list of :class:`~samza_nb.grouping.Move`), ``balance`` (of active tasks),
    ``lower_bound`` (the fewest moves any balanced assignment needs), ``violations`` (standby
    invariant checks, empty when fine), ``error`` and, after Apply, ``applied_moves``.
    """

    def __init__(
        self,
        job: Job | None = None,
        *,
        job_model: JobModel | None = None,
        plan: ExecutionPlan | None = None,
        tasks: int | Iterable[str | TaskModel] | None = None,
        processors: int = 3,
        locations: Sequence[str] | str | None = None,
        grouper: str | None = None,
        replication_factor: int | None = None,
        check_location: bool = True,
        auto_refresh: bool = True,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        start = explorer_start(
            job,
            job_model=job_model,
            plan=plan,
            tasks=tasks,
            processors=processors,
            locations=locations,
            grouper=grouper,
            replication_factor=replication_factor,
        )
        job, current, live, grouper = start.job, start.current, start.live, start.grouper
        replication_factor = start.replication_factor
        #: The attached job this explorer previews (None: a job of this notebook, or none).
        self.attached: Any = start.attached
        self.current: JobModel = current
        self.current_processors: dict[str, str] = live
        self.draft = ProcessorDraft(live)
        self.proposal: JobModel | None = None
        self.active_proposal: JobModel | None = None
        self.moves: list[Move] = []
        self.balance: Balance = Balance({})
        self.lower_bound = 0
        self.violations: list[str] = []
        self.error: str | None = None
        self.applied_moves: list[Move] = []
        self._text = ExplorerText(self)
        self._computed_for: tuple[Any, ...] | None = None
        self._syncing = False

        self.grouper = widgets.Dropdown(
            options=grouper_names(), value=grouper, description="grouper"
        )
        self.processors = widgets.BoundedIntText(
            value=len(live), min=1, max=max(1000, len(live)), description="processors"
        )
        self.locations = widgets.Text(
            description="locations",
            continuous_update=False,
            disabled=job is not None,
            tooltip="comma-separated, one per processor in id order (cycled)",
        )
        self.replication_factor = widgets.IntSlider(
            value=replication_factor, min=1, max=max(5, replication_factor), description="replicas"
        )
        self.check_location = widgets.Checkbox(
            value=check_location, description="standbys on other locations"
        )
        self.kill_choice = widgets.Dropdown(description="processor")
        self.kill_button = widgets.Button(description="Kill", button_style="danger")
        self.new_location = widgets.Text(description="location", placeholder="host-<id>")
        self.add_button = widgets.Button(description="Add processor")
        self.apply_button = widgets.Button(
            description="Apply",
            button_style="primary",
            disabled=job is None,
            tooltip="rebalance the running job to this proposal" if job else "no job to apply to",
        )
        self.reset_button = widgets.Button(description="Reset", tooltip="back to the current model")
        #: Next to Apply: what Apply leaves out (standbys) while the replication factor is > 1.
        self.apply_note = widgets.HTML()
        self.summary = widgets.HTML()
        self.model_table = widgets.HTML()
        self.moves_table = widgets.HTML()
        self.standby_table = widgets.HTML()
        self.checks = widgets.HTML()
        self._sync_controls()

        for control in (self.grouper, self.replication_factor, self.check_location):
            control.observe(self._on_option, names="value")
        self.processors.observe(self._on_processors, names="value")
        self.locations.observe(self._on_locations, names="value")
        self.kill_button.on_click(self._clicked(lambda: self.kill(str(self.kill_choice.value))))
        self.add_button.on_click(self._clicked(lambda: self.add(self.new_location.value)))
        self.apply_button.on_click(self._clicked(self.apply))
        self.reset_button.on_click(self._clicked(self.reset))
        super().__init__(
            job,
            children=[
                widgets.HBox([self.grouper, self.processors, self.locations]),
                widgets.HBox([self.replication_factor, self.check_location]),
                widgets.HBox(
                    [self.kill_choice, self.kill_button, self.new_location, self.add_button]
                ),
                widgets.HBox([self.apply_button, self.reset_button, self.apply_note]),
                self.summary,
                self.checks,
                self.model_table,
                self.moves_table,
                self.standby_table,
            ],
            auto_refresh=auto_refresh,
            interval=interval,
        )

    # -- editing the draft -----------------------------------------------------------------
    def kill(self, processor_id: str) -> JobModel | None:
        """Remove a processor from the draft; returns the new proposal (the job is unchanged)."""
        with self._lock:
            self.draft.kill(processor_id)
            self._draft_changed(f"killed processor {processor_id} (draft only until Apply)")
            return self.proposal

    def add(self, location: str | None = None) -> str:
        """Add a processor to the draft at ``location`` (blank: ``host-<id>``); returns its id.

        Ids continue after the largest numeric id, as :meth:`Job.add_processor` numbers them.
        """
        with self._lock:
            new_id = self.draft.add(location, current=self.current_processors)
            self._draft_changed(
                f"added processor {new_id} at {self.draft[new_id]} (draft only until Apply)"
            )
            return new_id

    def reset(self) -> None:
        """Drop the draft: back to the current model's processors."""
        with self._lock:
            self.draft = ProcessorDraft(self.current_processors)
            self._draft_changed("draft reset to the current model")

    def apply(self) -> JobModel:
        """Rebalance the job to the draft: one regroup of the draft's processors with the
        chosen grouper (new processors join, removed ones leave). Returns the job's new
        JobModel."""
        job = self.job
        if self.attached is not None:
            msg = f"nothing applied: {self.attached.preview_only}"
            raise ConfigError(msg)
        if job is None:
            msg = "this explorer has no job to apply to; create it with GrouperExplorer(job)"
            raise ConfigError(msg)
        with self._lock:
            if self.active_proposal is None:
                # The job would fail the same way, after switching to the grouper: refuse here.
                msg = f"the draft cannot be grouped, nothing applied: {self.error}"
                raise ConfigError(msg)
            blocker = self.apply_blocker()
            if blocker is not None:
                msg = f"nothing applied: {blocker}"
                raise ConfigError(msg)
            before = job.job_model
            expected = task_assignment(self.active_proposal, mode=TaskMode.ACTIVE)
            name = str(self.grouper.value)
            after = job.regroup(
                dict(self.draft),
                grouper=name,
                replication_factor=int(self.replication_factor.value),
                **self._options(name),
            )
            self.applied_moves = moved_tasks(before, after)
            self.refresh()
            text = (
                f"applied: the job runs {len(after.containers)} processors; "
                f"{len(self.applied_moves)} task(s) moved"
            )
            if task_assignment(after, mode=TaskMode.ACTIVE) != expected:
                text += " (the job's assignment differs from the proposal)"
            self.message.value = paragraph(text, colour=_OK)
            return after

    def apply_blocker(self) -> str | None:
        """Why Apply is disabled now (None when it may apply the proposal)."""
        job = self.job
        if self.attached is not None:
            return str(self.attached.preview_only)
        if job is None:
            return "no job to apply to"
        state = job.status().state
        if state in ("finished", "stopped", "failed", "drained"):
            return f"the job has {state}; a job that ended keeps the model it ended with"
        if self.active_proposal is None:
            # The summary above shows why, once.
            return "the draft cannot be grouped (see above)"
        if self.violations:
            return f"the proposal breaks a standby invariant: {self.violations[0]}"
        return None

    def _shown_blocker(self) -> str | None:
        """The blocker the view shows: none for an explorer of no job (its Apply is off anyway,
        and its note says what the standbys shown are)."""
        return self.apply_blocker() if self.job is not None or self.attached is not None else None

    def _options(self, grouper: str) -> dict[str, Any]:
        """The job's grouper options when ``grouper`` is the job's grouper; none otherwise (the
        options of one grouper mean nothing to another)."""
        job = self.job
        return job.grouper_options if job is not None and grouper == job.grouper else {}

    def _draft_changed(self, note: str) -> None:
        self._sync_controls()
        self._recompute()
        self.message.value = paragraph(note)

    def _sync_controls(self) -> None:
        self._syncing = True
        try:
            ids = java_sorted(self.draft)
            self.processors.value = len(ids)
            self.locations.value = ", ".join(self.draft[pid] for pid in ids)
            self.kill_choice.options = ids
            if self.kill_choice.value not in ids and ids:
                self.kill_choice.value = ids[0]
        finally:
            self._syncing = False

    # -- control callbacks -----------------------------------------------------------------
    def _clicked(self, action: Callable[[], object]) -> Callable[[widgets.Button], None]:
        """A button callback showing expected errors (bad input) as one line in the widget."""

        def on_click(_button: widgets.Button) -> None:
            try:
                action()
            except SamzaNbError as error:
                self.message.value = paragraph(str(error), colour=_ERROR)

        return on_click

    def _on_option(self, _change: dict[str, Any]) -> None:
        with self._lock:
            self._recompute()

    def _on_processors(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        with self._lock:
            added, killed = self.draft.resize(
                int(change["new"]), self.new_location.value, current=self.current_processors
            )
            if added:
                self._draft_changed(f"added processors {', '.join(added)} (draft only until Apply)")
            elif killed:
                self._draft_changed(
                    f"killed processors {', '.join(killed)} (draft only until Apply)"
                )

    def _on_locations(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        with self._lock:
            entries = [entry.strip() for entry in str(change["new"]).split(",") if entry.strip()]
            if self.job is not None or not entries:
                why = (
                    "a running job's processors keep their locations; kill one and add one elsewhere"
                    if self.job is not None
                    else "give at least one location"
                )
                self._sync_controls()
                self.message.value = paragraph(why, colour=_ERROR)
                return
            self.draft.relocate(entries)
            self._draft_changed("locations changed (draft only)")

    # -- computing -------------------------------------------------------------------------
    def _refresh(self) -> None:
        job = self.job
        if self.attached is not None:
            model = self.attached.job_model
            if model is not None and model != self.current:
                self.current, self.current_processors = model, _processors_of(model)
                self.draft = ProcessorDraft(self.current_processors)
                self._sync_controls()
                self.message.value = paragraph("the attached job has a new model: the draft starts from it")
        if job is not None and job.job_model is not self.current:
            # The job regrouped (Apply, a magic, a kill elsewhere): its model is the new base.
            self.current = job.job_model
            self.current_processors = job.processors
            self.draft = ProcessorDraft(self.current_processors)
            self._sync_controls()
            self.message.value = paragraph("the job regrouped: the draft starts from its new model")
        self._recompute()

    def _recompute(self) -> None:
        key = (
            self.current,
            tuple(self.draft.items()),
            self.grouper.value,
            self.replication_factor.value,
            self.check_location.value,
            # Apply turns off when the job ends, with the same proposal.
            None if self.job is None else self.job.done,
        )
        if key == self._computed_for:
            return
        self._computed_for = key
        try:
            self._propose()
            self.error = None
        except SamzaNbError as error:
            self.error = in_explorer_words(str(error))
            self.proposal = self.active_proposal = None
            self.moves, self.violations = [], []
            self.balance = Balance({})
        self._draw()

    def _propose(self) -> None:
        name = str(self.grouper.value)
        proposed = propose(
            self.current,
            self.draft,
            name,
            replication_factor=int(self.replication_factor.value),
            check_location=bool(self.check_location.value),
            job=self.job,
            options=self._options(name),
        )
        self.active_proposal, self.proposal = proposed.active, proposed.model
        self.moves, self.balance = proposed.moves, proposed.balance
        self.lower_bound, self.violations = proposed.lower_bound, proposed.violations

    # -- drawing ---------------------------------------------------------------------------
    def _draw(self) -> None:
        colour = _ERROR if self.error is not None else "#24292f"
        self.summary.value = paragraph(self._text.summary(), colour=colour, bold=True)
        blocker = self._shown_blocker()
        self.apply_button.disabled = self.job is None or blocker is not None
        self.apply_button.tooltip = blocker or "regroup the running job to this proposal"
        notes = self._text.apply_notes(blocker)
        self.apply_note.value = "".join(paragraph(text, colour=_WARN) for text in notes)
        self.checks.value = "".join(
            paragraph(line, colour=_OK if line.startswith("✓") else _ERROR)
            for line in self._text.checks()
        )
        self.model_table.value = self._text.model_table_html()
        self.moves_table.value = self._text.moves_table_html()
        self.standby_table.value = self._text.standby_table_html()

    # -- display ---------------------------------------------------------------------------
    def snapshot_html(self) -> str:
        return (
            self.summary.value
            + self.apply_note.value
            + self.checks.value
            + self.model_table.value
            + self.moves_table.value
            + self.standby_table.value
            + self.message.value
        )

    def snapshot_text(self) -> str:
        return self._text.snapshot(self._shown_blocker())

    def __repr__(self) -> str:
        return (
            f"GrouperExplorer({self.grouper.value!r}, {len(self.draft)} processors, "
            f"{len(self.moves)} moved, replication factor {self.replication_factor.value})"
        )
