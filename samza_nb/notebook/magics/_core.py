"""SamzaMagics: splits ``%samza COMMAND ARGS`` into a command and its arguments, calls it and
turns expected errors into one line where a person reads them.

The rule for short errors (the ``SamzaMagics.short_errors`` setting, ``None`` = automatic):
errors are one line (IPython's ``UsageError``) when a person is at the other end, meaning IPython
in a terminal or a kernel whose current request came from a frontend that accepts input
(JupyterLab, Notebook, VS Code). Batch runners (papermill, nbconvert, nbclient) do not accept
input, and a plain ``InteractiveShell`` (tests, embedding) is neither, so they, and anything run
while pytest runs a test, get the original exception with its traceback. Only
:class:`~samza_nb.errors.SamzaNbError` is shortened: bugs always keep their traceback. Argument
errors are ``UsageError`` in every mode, as for every IPython magic.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool

from samza_nb.errors import SamzaNbError
from samza_nb.notebook.failures import JOB_ERRORS, SHORT_ERRORS, job_error_handler, one_line
from samza_nb.notebook.magics._commands import (
    CELL_COMMANDS,
    LINE_COMMANDS,
    help_text,
    parser_of,
    unknown_command,
)
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.magics.help import HelpText

__all__ = ["SamzaMagics"]


def _person_at_frontend(shell: Any) -> bool:
    """Whether errors in ``shell`` are read by a person (see the module docstring)."""
    if os.environ.get("PYTEST_CURRENT_TEST"):
        return False
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        request = kernel.get_parent()
        return bool(request.get("content", {}).get("allow_stdin", False))
    # A terminal shell's module is loaded by the time it runs a magic; importing it here only
    # to answer "no" would load prompt_toolkit.
    terminal = sys.modules.get("IPython.terminal.interactiveshell")
    return terminal is not None and isinstance(shell, terminal.TerminalInteractiveShell)


def _one_line(text: str) -> str:
    return " ".join(text.split())


@magics_class
class SamzaMagics(Magics):
    """``%samza COMMAND ...`` and ``%%samza config``; ``%samza help`` lists the commands."""

    short_errors = Bool(
        None,
        allow_none=True,
        config=True,
        help=(
            "Show expected errors as one line (True), as full tracebacks (False), or decide from "
            "the frontend (None: one line for a person at a notebook or terminal, full tracebacks "
            "under papermill, nbconvert and tests)."
        ),
    )

    def __init__(self, shell: InteractiveShell) -> None:
        super().__init__(shell)
        self.session = Session(shell)
        # A failed or interrupted job reads as one short block, and any other expected error
        # as one line, wherever it is raised from: a magic or the Python API in a cell.
        shell.set_custom_exc(SHORT_ERRORS, job_error_handler(self._wants_short_errors))

    @line_cell_magic
    def samza(self, line: str, cell: str | None = None) -> Any:
        """Samza-style jobs on Spark: ``%samza help`` lists the commands."""
        words = line.split(maxsplit=1)
        if not words:
            return HelpText(help_text())
        name, rest = words[0], words[1] if len(words) > 1 else ""
        if cell is None:
            command = LINE_COMMANDS.get(name)
            if command is None:
                raise unknown_command(name)
            args = self._parse(name, command, rest)
            return self._call(name, command, self.session, args)
        cell_command = CELL_COMMANDS.get(name)
        if cell_command is None:
            if name in LINE_COMMANDS:
                msg = f"%%samza {name}: {name} takes no cell body; write %samza {name} on a line"
                raise UsageError(msg)
            raise unknown_command(name)
        args = self._parse(name, cell_command, rest)
        return self._call(name, cell_command, self.session, args, cell)

    def _parse(self, name: str, command: Callable[..., Any], rest: str) -> argparse.Namespace:
        try:
            words = _split(rest)
        except ValueError as error:  # "No closing quotation"; the line may hold a secret
            msg = f"%samza {name}: {error} in the line (see %samza help {name})"
            raise UsageError(msg) from None
        try:
            args: argparse.Namespace = parser_of(command).parse_args(words)
            return args
        except UsageError as error:
            msg = f"%samza {name}: {_one_line(str(error))} (see %samza help {name})"
            raise UsageError(msg) from error

    def _call(self, name: str, command: Callable[..., Any], *args: Any) -> Any:
        try:
            return command(*args)
        except SamzaNbError as error:
            # A job's failure is not bad input: the shell's handler shows it (failures.py).
            if isinstance(error, JOB_ERRORS) or not self._wants_short_errors():
                raise
            text = one_line(error)
            # An error that names the magic already (a %%samza config cell's line) is not
            # prefixed again.
            msg = text if text.startswith(("%samza", "%%samza")) else f"%samza {name}: {text}"
            raise UsageError(msg) from error

    def _wants_short_errors(self) -> bool:
        if self.short_errors is not None:
            return bool(self.short_errors)
        return _person_at_frontend(self.shell)


def _split(line: str) -> list[str]:
    """A magic line's words with a shell's quotes (--until 'caught-up' is caught-up, '' an
    empty value) and comments (a ``#`` starting a word ends the line), but backslashes kept as
    written (a regex, a Windows path) and a ``#`` inside a word kept (``x.y=\\d+#1``)."""
    lexer = shlex.shlex(_without_comment(line), posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    lexer.escape = ""
    return list(lexer)


def _without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a word outside quotes, as a shell reads it."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line
