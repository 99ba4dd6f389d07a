"""How a failed or interrupted job reads in a notebook: one short block, like Spark's failed task.

A user function that raised ends its job with a :class:`~samza_nb.errors.TaskError`. Its
traceback as Python prints it runs through the job handle, the processor thread and the
executor, none of which the user wrote. For a person at a notebook the kernel instead shows one
block: the operator, task, stream partition and offset, the exception, the user's own raising
line (file:line and its source) and, one click away, the traceback the task saw (in the Spark
worker). A foreground run interrupted by Ctrl-C (:class:`~samza_nb.errors.JobInterruptedError`)
is one line. Batch runs (papermill, nbconvert) and tests keep the full traceback, with the
task's traceback appended: the same rule as the magics' short errors
(:mod:`samza_nb.notebook.magics._core`).

Every other error samza_nb raises on purpose (a :class:`~samza_nb.errors.SamzaNbError`: a lost
metadata store, a job already running, a service that is not up) reads in a cell as it does
from ``%samza run``: one line, ``MetadataStoreError: …``, its hints in the notebook's words
(:mod:`samza_nb.notebook.hints`: ``reset_job(app.plan())``, not ``samza-nb reset MODULE:APP``).

:func:`job_error_handler` makes the IPython custom-exception handler ``%load_ext samza_nb``
registers (``InteractiveShell.set_custom_exc``) for :data:`SHORT_ERRORS`.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from samza_nb.errors import JobInterruptedError, SamzaNbError, TaskError
from samza_nb.notebook.hints import in_notebook_words
from samza_nb.notebook.widgets._html import ERROR, FONT, TEXT
from samza_nb.runtime.task.user_code import describe

__all__ = [
    "JOB_ERRORS",
    "SHORT_ERRORS",
    "job_error_handler",
    "one_line",
    "task_error_html",
    "task_error_text",
]

#: A job's failure or interruption: a block (TaskError) or a line (an interrupt).
JOB_ERRORS: tuple[type[BaseException], ...] = (TaskError, JobInterruptedError)
#: The errors the handler shows in short: the job's and every error samza_nb raises on purpose
#: (bugs, any other exception, keep their traceback).
SHORT_ERRORS: tuple[type[BaseException], ...] = (*JOB_ERRORS, SamzaNbError)


def one_line(error: BaseException) -> str:
    """An expected error's message as one line, its hints in the notebook's words."""
    return " ".join(in_notebook_words(str(error)).split())

_RED = "\x1b[0;31m"
_BOLD_RED = "\x1b[1;31m"
_RESET = "\x1b[0m"


def _colours(colour: bool) -> tuple[str, str, str]:
    """(red, bold red, reset), or three empty strings."""
    return (_RED, _BOLD_RED, _RESET) if colour else ("", "", "")


def _in_colour(shell: Any) -> bool:
    """Whether the shell shows colours (not under ``--colors=NoColor``)."""
    return str(getattr(shell, "colors", "")).lower() != "nocolor"


def _cause(error: TaskError) -> str:
    """``Type: message`` of what the user's code raised."""
    cause = error.__cause__
    if cause is not None:
        return f"{type(cause).__name__}: {cause}"
    lines = (error.worker_traceback or "").strip().splitlines()
    return lines[-1] if lines else str(error)


def _where(error: TaskError) -> str:
    parts = []
    if error.op_id:
        parts.append(f"operator {error.op_id}")
    if error.task:
        parts.append(f"task {error.task}")
    if error.ssp is not None:
        parts.append(f"{error.ssp} offset {error.offset}")
    return " · ".join(parts)


def _raised_at(error: TaskError) -> tuple[str, str] | None:
    if error.raised_at is None:
        return None
    filename, lineno, line = error.raised_at
    return describe(filename, lineno), line


def task_error_text(error: TaskError, *, colour: bool = True) -> list[str]:
    """The short block as lines of text (ANSI colours unless ``colour`` is False), for error
    outputs and terminals."""
    red, bold, reset = _colours(colour)
    lines = [f"{bold}TaskError{reset} in {_where(error)}", f"{red}{_cause(error)}{reset}"]
    raised = _raised_at(error)
    if raised is not None:
        place, line = raised
        lines.append(f"  raised at {place}" + (f":  {line}" if line else ""))
    if error.operator_location:
        lines.append(f"  operator declared at {error.operator_location}")
    return lines


def task_error_html(error: TaskError) -> str:
    """The short block as HTML, the task's traceback folded under it."""
    code = "font-family:var(--jp-code-font-family,monospace)"
    rows = [
        f'<div><b style="color:{ERROR}">TaskError</b> in {escape(_where(error))}</div>',
        f'<div style="color:{ERROR};{code}">{escape(_cause(error))}</div>',
    ]
    raised = _raised_at(error)
    if raised is not None:
        place, line = raised
        source = f': <code style="{code}">{escape(line)}</code>' if line else ""
        rows.append(f"<div>raised at <b>{escape(place)}</b>{source}</div>")
    if error.operator_location:
        rows.append(f"<div>operator declared at {escape(error.operator_location)}</div>")
    rows.append(
        "<div>nothing past this offset was committed; fix the function and run again, or set "
        "<code>task.errors.skip=true</code> to skip such messages</div>"
    )
    if error.worker_traceback:
        rows.append(
            "<details><summary>the task's traceback</summary>"
            f'<pre style="{code};font-size:11px;white-space:pre-wrap">'
            f"{escape(error.worker_traceback)}</pre></details>"
        )
    return (
        f'<div class="samza-task-error" style="border-left:4px solid {ERROR};padding:4px 10px;'
        f'margin:4px 0;font-family:{FONT};font-size:12px;color:{TEXT}">{"".join(rows)}</div>'
    )


def job_error_handler(short: Callable[[], bool]) -> Callable[..., list[str]]:
    """An IPython custom-exception handler for :data:`SHORT_ERRORS`; ``short()`` says whether a
    person reads the output (then the short block or line) or a batch run does (the full
    traceback)."""

    def handler(
        shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: Any = None
    ) -> list[str]:
        stb = _structured(shell, etype, value, tb, tb_offset, short=short())
        # IPython leaves showing to a custom handler; the kernel's error reply is this one.
        shell._showtraceback(etype, value, stb)
        return stb

    return handler


def _structured(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: Any, *, short: bool
) -> list[str]:
    if not short:
        stb: list[str] = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
        if isinstance(value, TaskError) and value.worker_traceback:
            stb = [*stb, "", "The task's traceback:", value.worker_traceback]
        return stb
    colour = _in_colour(shell)
    _, bold, reset = _colours(colour)
    if isinstance(value, JobInterruptedError):
        return [f"{bold}KeyboardInterrupt{reset}: {value}"]
    if not isinstance(value, TaskError):
        return [f"{bold}{type(value).__name__}{reset}: {one_line(value)}"]
    from IPython.display import display

    plain = "\n".join(task_error_text(value, colour=colour))
    display({"text/html": task_error_html(value), "text/plain": plain}, raw=True)
    return [f"{bold}TaskError{reset}: the job failed in {_where(value)} (details above)"]
