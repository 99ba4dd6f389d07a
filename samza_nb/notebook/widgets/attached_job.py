"""AttachedJobWidget: the live view of a distributed job a notebook attached to.

It draws what the job's coordinator keeps (``%samza attach``): the live processors with their
locations and the leader, the job-model versions with their barrier states (joined of expected)
and the tasks each version moved, and task → processor → location in the newest model beside
where each task last ran. A Drain button drains the job. It refreshes every ``interval``
seconds until no processor is left; the job's processors are never joined. A live view shows
the job as it is now (after Run All: its end); ``ObservationView`` keeps one moment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import ipywidgets as widgets

from samza_nb.notebook.widgets._html import ERROR, html_table, paragraph, text_table
from samza_nb.notebook.widgets._live import DEFAULT_INTERVAL, LiveWidget
from samza_nb.notebook.widgets.observation_view import (
    PROCESSOR_HEADERS,
    TASK_HEADERS,
    VERSION_HEADERS,
    processor_rows,
    task_rows,
    version_rows,
)

if TYPE_CHECKING:
    from samza_nb.coordination.observation import JobObservation
    from samza_nb.notebook.magics.attach_handle import AttachedJob, AttachedJobStatus

__all__ = ["AttachedJobWidget"]



class AttachedJobWidget(LiveWidget):
    """Processors, versions and assignment of an :class:`AttachedJob`, and a Drain button.

    Attributes: ``attached`` (the handle), ``observation`` and ``job_status`` (the last read),
    ``summary``, ``processors_table``, ``versions_table``, ``tasks_table`` (HTML widgets) and
    ``drain_button``.
    """

    def __init__(
        self, attached: AttachedJob, *, auto_refresh: bool = True, interval: float = DEFAULT_INTERVAL
    ) -> None:
        self.attached = attached
        self.observation: JobObservation | None = None
        self.job_status: AttachedJobStatus | None = None
        self.summary = widgets.HTML()
        self.processors_table = widgets.HTML()
        self.versions_table = widgets.HTML()
        self.tasks_table = widgets.HTML()
        self.drain_button = widgets.Button(
            description="Drain", tooltip="drain the job: every processor finishes what is in flight"
        )
        self._drain_clicked = False
        self.drain_button.on_click(self._on_drain)
        # LiveWidget reads only ``done`` of what it watches, which AttachedJob answers.
        super().__init__(
            cast(Any, attached),
            children=[
                self.summary,
                self.drain_button,
                self.processors_table,
                self.versions_table,
                self.tasks_table,
            ],
            auto_refresh=auto_refresh,
            interval=interval,
        )

    # -- reading ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        self.job_status = self.attached.status()
        self.observation = self.attached.last
        self.drain_button.disabled = self._drain_clicked or self.job_status.done
        self.summary.value = paragraph(self._summary_text(), bold=True)
        self.processors_table.value = html_table(
            PROCESSOR_HEADERS, self.processor_rows(), caption="processors"
        )
        self.versions_table.value = html_table(
            VERSION_HEADERS, self.version_rows(), caption="job model versions (newest first)"
        )
        self.tasks_table.value = html_table(
            TASK_HEADERS, self.task_rows(), caption="tasks in the newest model"
        )

    def _summary_text(self) -> str:
        status = self.job_status
        if status is None:
            return ""
        return (
            f"{self.attached.app_name} (job id {self.attached.job_id}) at {self.attached.url}: "
            f"{status.state}; leader {status.leader or '–'}; model version {status.version or '–'} "
            f"(barrier {status.barrier or '–'}, active {status.active_version or '–'})"
        )

    def processor_rows(self) -> list[list[str]]:
        return processor_rows(self.observation) if self.observation is not None else []

    def version_rows(self) -> list[list[str]]:
        return version_rows(self.observation) if self.observation is not None else []

    def task_rows(self) -> list[list[str]]:
        return task_rows(self.observation) if self.observation is not None else []

    # -- the button ------------------------------------------------------------------------
    def _on_drain(self, _button: widgets.Button) -> None:
        self._drain_clicked = True
        self.drain_button.disabled = True
        try:
            self.attached.drain()
            self.message.value = paragraph("drain requested: every processor drains and stops")
        except Exception as error:  # shown under the widget, never raised into the frontend
            self._drain_clicked = False
            self.message.value = paragraph(f"drain failed: {error}", colour=ERROR)
        self.refresh()

    # -- snapshots -------------------------------------------------------------------------
    def snapshot_html(self) -> str:
        return (
            self.summary.value
            + self.processors_table.value
            + self.versions_table.value
            + self.tasks_table.value
            + self.message.value
        )

    def snapshot_text(self) -> str:
        return "\n".join(
            [
                self._summary_text(),
                "processors:",
                text_table(PROCESSOR_HEADERS, self.processor_rows()),
                "job model versions (newest first):",
                text_table(VERSION_HEADERS, self.version_rows()),
                "tasks in the newest model:",
                text_table(TASK_HEADERS, self.task_rows()),
            ]
        )

    def __repr__(self) -> str:
        state = self.job_status.state if self.job_status else "?"
        return f"AttachedJobWidget({self.attached.url!r}, {state})"
