"""What every widget shares: ``refresh()``, the auto-refresh thread and the static snapshot.

A widget is a view of a job handle (or a plan): ``refresh()`` reads the handle through its
public API and redraws. While the job runs, a daemon thread calls ``refresh()`` every
``interval`` seconds; once ``job.status().done`` it refreshes one last time and ends, so no
thread outlives the job.

Outside a live frontend (papermill, nbconvert, a terminal) the widget model cannot be drawn, so
the display bundle also carries ``text/html`` and ``text/plain`` snapshots of what the widget
shows. Widgets are displayed with a display id; the final refresh re-publishes the bundle under
that id, so a notebook executed by papermill keeps the job's final state rather than the state
at the moment the cell ran. A final refresh that would land after the last cell ran is lost to
papermill, so the magics that end or wait for a job (``run`` without ``--background``,
``stop``, ``drain --wait``, ``status``) call :func:`settle_views` to make every view of a
finished job final at once.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from samza_nb.errors import ConfigError
from samza_nb.notebook.widgets._html import paragraph

if TYPE_CHECKING:
    from samza_nb.runtime.job import Job

__all__ = ["LiveWidget", "settle_views"]

#: Seconds between two refreshes of a running job: fast enough to watch epochs go by, slow
#: enough that the comm traffic of a redraw stays negligible next to an epoch.
DEFAULT_INTERVAL = 0.5


class LiveWidget(widgets.VBox):
    """A VBox that redraws itself from a job handle.

    Subclasses set their own attributes and child widgets, then call ``__init__`` (which does
    the first refresh), and implement ``_refresh``, ``snapshot_html`` and ``snapshot_text``.
    """

    # A class default, because ipywidgets closes (stops) a widget whose constructor failed.
    _thread: threading.Thread | None = None

    def __init__(
        self,
        job: Job | None,
        *,
        children: list[widgets.Widget],
        auto_refresh: bool,
        interval: float,
    ) -> None:
        if interval <= 0:
            msg = f"interval must be a positive number of seconds, got {interval!r}"
            raise ConfigError(msg)
        self.job = job
        self.interval = interval
        #: The last error the auto-refresh thread met (it keeps going; the next refresh may work).
        self.last_error: str | None = None
        #: One line under the widget: errors and the results of button clicks.
        self.message = widgets.HTML()
        self._lock = threading.RLock()
        self._display_id = f"samza-nb-{uuid.uuid4().hex}"
        self._displayed = False
        super().__init__(children=[*children, self.message])
        _VIEWS.add(self)
        self.refresh()
        if auto_refresh and job is not None and not job.status().done:
            self.start_auto_refresh()

    # -- refreshing ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the job (or plan) again and redraw."""
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        """Redraw from the job or plan; called under the widget's lock."""
        raise NotImplementedError

    def start_auto_refresh(self, interval: float | None = None) -> None:
        """Refresh every ``interval`` seconds in a daemon thread until the job is done."""
        if self.job is None:
            msg = f"{type(self).__name__} shows a plan, not a job: there is nothing to refresh"
            raise ConfigError(msg)
        if interval is not None:
            self.interval = interval
        if self.auto_refreshing:
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._auto_refresh,
            args=(self._stop,),
            name=f"samza-nb-{type(self).__name__}",
            daemon=True,
        )
        self._thread.start()

    def stop_auto_refresh(self) -> None:
        """Stop the auto-refresh thread (the widget keeps what it shows)."""
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        if thread is not threading.current_thread():
            thread.join()

    @property
    def auto_refreshing(self) -> bool:
        """Whether the auto-refresh thread is running."""
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the auto-refresh thread made its final refresh; False on timeout."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _auto_refresh(self, stop: threading.Event) -> None:
        job = self.job
        assert job is not None  # start_auto_refresh checked it
        while not stop.wait(self.interval):
            done = False
            try:
                # Read "done" before refreshing: once the job says it is done its counters are
                # final, so this refresh is the final one.
                done = job.status().done
                self.refresh()
            except Exception as error:  # a failed redraw must not end the live view
                self.last_error = f"{type(error).__name__}: {error}"
                self.message.value = paragraph(
                    f"refresh failed: {self.last_error}", colour="#cf222e"
                )
            if done:
                self.publish_snapshot()
                return

    def close(self) -> None:
        """Stop refreshing and close the widget models."""
        self.stop_auto_refresh()
        super().close()

    # -- display ---------------------------------------------------------------------------
    def snapshot_html(self) -> str:
        """What the widget shows, as static HTML."""
        raise NotImplementedError

    def snapshot_text(self) -> str:
        """What the widget shows, as plain text."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        # ipywidgets' bundle (the widget view and a one-line text/plain) plus the snapshots,
        # which frontends without the widget manager (nbconvert, GitHub, terminals) show.
        bundle: dict[str, Any] = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.snapshot_html()
        bundle["text/plain"] = self.snapshot_text()
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display

        self._displayed = True
        display(self._repr_mimebundle_(), raw=True, display_id=self._display_id)

    def publish_snapshot(self) -> None:
        """Re-publish the display bundle of every place this widget was displayed."""
        if not self._displayed:
            return
        from IPython.display import update_display

        update_display(self._repr_mimebundle_(), raw=True, display_id=self._display_id)


#: Every live widget of this kernel, so the magics can settle the views of a finished job.
_VIEWS: weakref.WeakSet[LiveWidget] = weakref.WeakSet()


def settle_views(job: Job) -> None:
    """Once ``job`` is done: stop refreshing its views, redraw them and re-publish their
    snapshots now, while the cell that ended the job is still running."""
    if not job.status().done:
        return
    for view in list(_VIEWS):
        if view.job is job:
            view.stop_auto_refresh()
            view.refresh()
            view.publish_snapshot()
