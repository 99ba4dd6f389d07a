"""ShowView: ``job.show(...)`` kept live (``%samza show``): the latest messages of a stream or
operator, or the job at a glance, redrawn while the job runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from samza_nb.notebook.widgets._html import paragraph
from samza_nb.notebook.widgets._live import DEFAULT_INTERVAL, LiveWidget

if TYPE_CHECKING:
    from samza_nb.job.handle import Job
    from samza_nb.job.overview import JobOverview, LatestMessages

__all__ = ["ShowView"]


class ShowView(LiveWidget):
    """What ``job.show(target, n)`` returns, redrawn every ``interval`` seconds until the job
    is done. Attributes: ``target``, ``n``, ``shown`` (the last :class:`JobOverview` or
    :class:`LatestMessages`) and ``view`` (the HTML widget)."""

    freeze_when_final = True

    def __init__(
        self,
        job: Job,
        target: str | None = None,
        n: int = 20,
        *,
        auto_refresh: bool = True,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self.target = target
        self.n = n
        # The first look checks the target (a wrong name fails here, not in the thread).
        self.shown: JobOverview | LatestMessages = job.show(target, n)
        self.heading = widgets.HTML()
        self.view = widgets.HTML()
        super().__init__(job, children=[self.heading, self.view], auto_refresh=auto_refresh, interval=interval)

    def _refresh(self) -> None:
        assert self.job is not None
        self.shown = self.job.show(self.target, self.n)
        status = self.job.status()
        what = "the job at a glance" if self.target is None else f"latest messages of {self.target}"
        self.heading.value = paragraph(
            f"{self.job.plan.app_name}: {what} · {status.state}, epoch {status.epoch}", bold=True
        )
        self.view.value = self.shown._repr_html_()

    def snapshot_html(self) -> str:
        return self.heading.value + self.view.value + self.message.value

    def snapshot_text(self) -> str:
        assert self.job is not None
        status = self.job.status()
        return f"{self.job.plan.app_name} · {status.state}, epoch {status.epoch}\n{self.shown.to_text()}"

    def __repr__(self) -> str:
        return f"ShowView({self.target!r}, n={self.n}, {self.shown!r})"
