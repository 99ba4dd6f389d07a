"""A status line for every wait a person would otherwise watch in silence.

``with StatusLine("starting Spark") as line: ...`` shows "starting Spark…" at once, keeps the
elapsed seconds current every half second while the block runs (``line.update(text)`` changes
the words) and ends on ``line.done(text)``, on "starting Spark: done in 7.4 s", or, when the
block raises, on "starting Spark: failed after 7.4 s". In a Jupyter kernel the line is one
display that is updated in place; elsewhere (a terminal, a script) the first and the last line
are printed.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
import uuid
from html import escape
from types import TracebackType
from typing import Any

from samza_nb.notebook.widgets._html import ERROR, FONT, TEXT

__all__ = ["StatusLine", "show_spark_starts"]

#: Seconds between two updates of the elapsed time: the feedback a person gets within 0.5 s.
TICK = 0.5


def _in_kernel() -> bool:
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


class StatusLine:
    """One line of progress; see the module docstring."""

    def __init__(self, text: str, *, tick: float = TICK, done_text: str | None = None) -> None:
        self.text = text
        #: The final line when the block ends well ("{seconds}" is replaced), else the default.
        self.done_text = done_text
        self.tick = tick
        self.final: str | None = None
        self._failed = False
        self._began = time.monotonic()
        self._display_id = f"samza-nb-status-{uuid.uuid4().hex}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._kernel = _in_kernel()

    # -- what it shows -----------------------------------------------------------------------
    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._began

    def line(self) -> str:
        """The text shown now."""
        if self.final is not None:
            return self.final
        seconds = int(self.elapsed)
        return f"{self.text}… {seconds} s" if seconds else f"{self.text}…"

    def _bundle(self) -> dict[str, Any]:
        text = self.line()
        colour = ERROR if self._failed else TEXT
        marker = "" if self.final is not None else "⏳ "
        html = (
            f'<div class="samza-nb-status" style="font-family:{FONT};font-size:12px;'
            f'margin:2px 0;color:{colour}">{marker}{escape(text)}</div>'
        )
        return {"text/plain": text, "text/html": html}

    # -- showing it ---------------------------------------------------------------------------
    def start(self) -> StatusLine:
        """Show the line now and keep its elapsed time current."""
        self._began = time.monotonic()
        if not self._kernel:
            print(self.line(), flush=True)
            return self
        from IPython.display import display

        display(self._bundle(), raw=True, display_id=self._display_id)
        # The ticking thread sends its updates as the cell that started it (the kernel keeps the
        # request being answered in context variables).
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._ticking,), name="samza-nb-status", daemon=True
        )
        self._thread.start()
        return self

    def update(self, text: str) -> None:
        """New words for the wait (the elapsed time goes on)."""
        self.text = text
        self._publish()

    def done(self, text: str | None = None, *, failed: bool = False) -> None:
        """End the wait on ``text`` (default "<text>: done in N s")."""
        if self.final is not None:
            return
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._failed = failed
        verb = "failed after" if failed else "done in"
        if text is None and self.done_text is not None and not failed:
            text = self.done_text.replace("{seconds}", f"{self.elapsed:.1f}")
        self.final = text or f"{self.text}: {verb} {self.elapsed:.1f} s"
        if self._kernel:
            self._publish()
        else:
            print(self.final, flush=True)

    def _ticking(self) -> None:
        while not self._stop.wait(self.tick):
            self._publish()

    def _publish(self) -> None:
        if not self._kernel:
            return
        from IPython.display import update_display

        update_display(self._bundle(), raw=True, display_id=self._display_id)

    def __enter__(self) -> StatusLine:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.done(failed=error is not None)


def _spark_starting(master: str) -> contextlib.AbstractContextManager[object]:
    """A status line while Spark starts on the kernel's main thread (a cell waits)."""
    if threading.current_thread() is not threading.main_thread():
        return contextlib.nullcontext()
    return StatusLine(
        f"starting Spark on {master} (the first time in a kernel a JVM starts: 5–15 s)",
        done_text=f"Spark started on {master} in {{seconds}} s",
    )


def show_spark_starts() -> None:
    """Show a status line whenever a cell waits for Spark to start (``%load_ext samza_nb``
    calls it): ``run(app, background=True)`` and ``%samza run`` no longer wait in silence."""
    from samza_nb.runtime.executors.spark import SESSION_START_HOOKS

    if _spark_starting not in SESSION_START_HOOKS:
        SESSION_START_HOOKS.append(_spark_starting)
