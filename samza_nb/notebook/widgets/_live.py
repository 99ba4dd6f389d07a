"""What every widget shares: ``refresh()``, the auto-refresh thread and the static snapshot.

A widget is a view of a job handle (or a plan): ``refresh()`` reads the handle through its
public API and redraws. While the job runs, a daemon thread calls ``refresh()`` every
``interval`` seconds; once ``job.done`` it refreshes one last time and ends, so no
thread outlives the job.

Views that survive: the display bundle carries, beside the widget view, ``text/html`` and
``text/plain`` snapshots of what the widget shows. A frontend without the widget's model (a
notebook reopened without its kernel, ``jupyter nbconvert --to html`` offline, GitHub) cannot
draw the widget, and JupyterLab then shows "Error displaying widget: model not found" rather
than the snapshot beside it. So a view becomes its snapshot when it is final: **a final view
nobody draws is replaced by its snapshot** (:meth:`LiveWidget.freeze`). A view is final once
its job is done (or at once, for a view of a plan or of no job); it is frozen when it was
displayed by a batch run (an execute request that takes no input: papermill, nbconvert
``--execute``, nbclient) and no frontend drew it (``_view_count``, which ipywidgets' frontends
keep, is 0). The display is re-published under its display id with the snapshot only, so the
saved notebook holds plain HTML that every frontend shows, with the final numbers. In a live
JupyterLab the view stays a widget (sliders and buttons keep working); ``view.freeze()`` turns
it into its snapshot by hand before saving. Views with nothing left to do once their job ended
(RunProgress: no slider, no button) are frozen when final wherever they are displayed, so a
notebook saved from JupyterLab keeps them too.

A view displayed where a person works also gets a *fallback* output just before it (its
snapshot, kept current about once a second, :mod:`samza_nb.notebook.widgets._fallback`), which
JupyterLab shows instead of "Error displaying widget: model not found" when the notebook is
reopened without the kernel that held the view's model: the slider and buttons are gone, the
last state stays.

When it happens: the auto-refresh thread's final refresh, :func:`settle_views` (called by the
magics that end or wait for a job: ``run`` without ``--background``, ``stop``, ``drain
--wait``, ``status``), and after every cell (an IPython ``post_run_cell`` hook, registered when
the first view is displayed), so a job that ended during a cell has final, frozen views before
that cell ends: a message published after the last cell would be lost to papermill.
"""

from __future__ import annotations

import contextvars
import threading
import uuid
import weakref
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from samza_nb.errors import ConfigError
from samza_nb.notebook.widgets._fallback import Fallback
from samza_nb.notebook.widgets._html import ERROR, paragraph

if TYPE_CHECKING:
    from samza_nb.job.handle import Job

__all__ = ["LiveWidget", "settle_views"]

#: Seconds between two refreshes of a running job: fast enough to watch epochs go by, slow
#: enough that the comm traffic of a redraw stays negligible next to an epoch.
DEFAULT_INTERVAL = 0.5
#: Seconds a change of what a view shows waits before its fallback output follows: changes in
#: that time are published together (the fallback carries the whole snapshot).
FALLBACK_DELAY = 1.0


class LiveWidget(widgets.VBox):
    """A VBox that redraws itself from a job handle.

    Subclasses set their own attributes and child widgets, then call ``__init__`` (which does
    the first refresh), and implement ``_refresh``, ``snapshot_html`` and ``snapshot_text``.
    """

    # A class default, because ipywidgets closes (stops) a widget whose constructor failed.
    _thread: threading.Thread | None = None
    #: Freeze once final even where a frontend draws it: for views with nothing left to do
    #: after their job ended (no slider, no button), so a notebook saved from JupyterLab keeps
    #: them too.
    freeze_when_final = False

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
        #: Displayed by a batch run (see the module docstring).
        self._batch = False
        #: The final refresh of a done job was made and published.
        self._settled = False
        #: Re-published as its snapshot only: the widget view is gone from the output.
        self.frozen = False
        #: The fallback outputs of its displays where a person works (module docstring).
        self._fallbacks: list[Fallback] = []
        self._fallback_pending = False
        super().__init__(children=[*children, self.message])
        # Ask the frontends to count the views they draw (ipywidgets keeps the count in sync).
        self._view_count = 0
        _VIEWS.add(self)
        self.refresh()
        if auto_refresh and job is not None and not job.done:
            self.start_auto_refresh()

    # -- refreshing ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the job (or plan) again and redraw."""
        with self._lock:
            self._refresh()
        self._touch()

    def _touch(self, *_change: Any) -> None:
        """What the view shows changed: its fallback outputs follow within FALLBACK_DELAY."""
        with self._lock:
            if not self._fallbacks or self.frozen or self._fallback_pending:
                return
            self._fallback_pending = True
        # In the kernel's context (it names the cell the output belongs to).
        context = contextvars.copy_context()
        timer = threading.Timer(FALLBACK_DELAY, context.run, args=(self._update_fallbacks,))
        timer.daemon = True
        timer.start()

    def _update_fallbacks(self) -> None:
        with self._lock:
            self._fallback_pending = False
            if self.frozen or not self._fallbacks:
                return
            html, text = self.snapshot_html(), self.snapshot_text()
        for fallback in self._fallbacks:
            fallback.update(html, text)

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
                done = job.done
                self.refresh()
            except Exception as error:  # a failed redraw must not end the live view
                self.last_error = f"{type(error).__name__}: {error}"
                self.message.value = paragraph(f"refresh failed: {self.last_error}", colour=ERROR)
            if done:
                self._settled = True
                self.publish_snapshot()
                self._freeze_if_unseen()
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

    def _snapshot_bundle(self) -> dict[str, Any]:
        return {"text/html": self.snapshot_html(), "text/plain": self.snapshot_text()}

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        # ipywidgets' bundle (the widget view and a one-line text/plain) plus the snapshots,
        # which frontends without the widget manager (nbconvert, GitHub, terminals) show.
        if self.frozen:
            return self._snapshot_bundle()
        bundle: dict[str, Any] = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle.update(self._snapshot_bundle())
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display

        self._displayed = True
        self._batch = self._batch or _batch_request()
        _register_cell_hook()
        if not self._batch and not self.frozen and _in_kernel():
            fallback = Fallback()
            fallback.show(self.snapshot_html(), self.snapshot_text())
            if not self._fallbacks:
                _observe_html(self, self._touch)
            self._fallbacks.append(fallback)
        display(self._repr_mimebundle_(), raw=True, display_id=self._display_id)

    def publish_snapshot(self) -> None:
        """Re-publish the display bundle of every place this widget was displayed."""
        if not self._displayed:
            return
        from IPython.display import update_display

        update_display(self._repr_mimebundle_(), raw=True, display_id=self._display_id)
        if self.frozen:
            for fallback in self._fallbacks:
                fallback.retire()
            self._fallbacks = []
        else:
            self._update_fallbacks()

    @property
    def final(self) -> bool:
        """Whether what the view shows can no longer change: no job, or the job is done."""
        return self.job is None or self._settled or self.job.done

    def freeze(self) -> None:
        """Replace every display of this view with its snapshot (HTML and text, no widget),
        as a saved notebook or an export will show it; stops refreshing. The widget itself
        still works where it is displayed again."""
        self.stop_auto_refresh()
        if self.job is not None and not self._settled and self.job.done:
            self.refresh()
            self._settled = True
        self.frozen = True
        self.publish_snapshot()

    def settle(self) -> None:
        """Once final: the last refresh, published now; frozen if a batch run displayed it
        and no frontend drew it (module docstring)."""
        if self.job is not None and not self._settled:
            if not self.job.done:
                return
            self.stop_auto_refresh()
            self.refresh()
            self._settled = True
            self.publish_snapshot()
        self._freeze_if_unseen()

    def _freeze_if_unseen(self) -> None:
        unseen = self._batch and not self._view_count
        if self._displayed and not self.frozen and (unseen or self.freeze_when_final):
            self.freeze()


def _in_kernel() -> bool:
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


def _observe_html(widget: widgets.Widget, callback: Any) -> None:
    """Call ``callback`` when the value of any HTML widget inside ``widget`` changes (every view
    redraws through them: a slider's replay, a fold, an explorer's draft)."""
    if isinstance(widget, widgets.HTML):
        widget.observe(callback, names="value")
    for child in getattr(widget, "children", ()):
        _observe_html(child, callback)


def _batch_request() -> bool:
    """Whether the cell running now came from a batch runner: papermill, nbconvert and
    nbclient send execute requests that take no input, JupyterLab, Notebook and VS Code send
    requests that do (the rule the magics use for short errors)."""
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        return False
    request = kernel.get_parent()
    return not request.get("content", {}).get("allow_stdin", True)


_HOOKED: set[int] = set()


def _register_cell_hook() -> None:
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or id(shell) in _HOOKED:
        return
    _HOOKED.add(id(shell))
    shell.events.register("post_run_cell", _after_cell)


def _after_cell(*_args: Any) -> None:
    """Settle every displayed view that became final during the cell (module docstring)."""
    for view in list(_VIEWS):
        if not view._displayed or view.frozen:
            continue
        try:
            view.settle()
        except Exception as error:  # a view that cannot settle must not fail the cell
            view.last_error = f"{type(error).__name__}: {error}"


#: Every live widget of this kernel, so the magics can settle the views of a finished job.
_VIEWS: weakref.WeakSet[LiveWidget] = weakref.WeakSet()


def settle_views(job: Job) -> None:
    """Once ``job`` is done: stop refreshing its views, redraw them and re-publish their
    snapshots now, while the cell that ended the job is still running (and freeze the ones a
    batch run displayed and nobody drew)."""
    if not job.done:
        return
    for view in list(_VIEWS):
        if view.job is job:
            view.settle()
