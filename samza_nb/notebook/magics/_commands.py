"""The ``%samza`` commands by name, and the help text built from their argument parsers."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.magics.add_processor import command as add_processor
from samza_nb.notebook.magics.attach import command as attach
from samza_nb.notebook.magics.config import cell_command as config_cell
from samza_nb.notebook.magics.config import command as config
from samza_nb.notebook.magics.drain import command as drain
from samza_nb.notebook.magics.grouper import command as grouper
from samza_nb.notebook.magics.help import help_command
from samza_nb.notebook.magics.jobmodel import command as jobmodel
from samza_nb.notebook.magics.kill_processor import command as kill_processor
from samza_nb.notebook.magics.plan import command as plan
from samza_nb.notebook.magics.run import command as run
from samza_nb.notebook.magics.show import command as show
from samza_nb.notebook.magics.status import command as status
from samza_nb.notebook.magics.stop import command as stop

__all__ = ["CELL_COMMANDS", "LINE_COMMANDS", "help_text", "parser_of", "unknown_command"]

LineCommand = Callable[[Session, argparse.Namespace], Any]
CellCommand = Callable[[Session, argparse.Namespace, str], Any]


def parser_of(command: Callable[..., Any]) -> MagicArgumentParser:
    """The parser ``@magic_arguments`` attached to a command function."""
    parser: MagicArgumentParser = getattr(command, "parser")  # noqa: B009 - set by a decorator
    return parser


def _usage(command: Callable[..., Any], *, cell: bool = False) -> str:
    # IPython's formatter writes usage as an RST literal block ("::" then "%samza ..."),
    # wrapped with deep indents; one line per command reads better in a list.
    text = " ".join(parser_of(command).format_usage().replace("::", "").split())
    return f"%{text}" if cell else text


def _summary(command: Callable[..., Any]) -> str:
    # The parser's description is the command's docstring; its first paragraph (which may wrap
    # over several lines) is the summary.
    first = (parser_of(command).description or "").strip().partition("\n\n")[0]
    return " ".join(first.split())


def unknown_command(name: str) -> UsageError:
    names = sorted(set(LINE_COMMANDS) | set(CELL_COMMANDS))
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    msg = f"%samza: unknown command {name!r}; {hint}commands: {', '.join(names)}"
    return UsageError(msg)


def help_text(topic: str | None = None) -> str:
    """All commands with one line each, or the full arguments of ``topic``."""
    if topic is not None:
        if topic not in LINE_COMMANDS and topic not in CELL_COMMANDS:
            raise unknown_command(topic)
        parts = []
        if topic in LINE_COMMANDS:
            parts.append(parser_of(LINE_COMMANDS[topic]).format_help().replace("::\n\n  ", ""))
        if topic in CELL_COMMANDS:
            parts.append(parser_of(CELL_COMMANDS[topic]).format_help().replace("::\n\n  ", "%"))
        return "\n".join(parts)
    lines = ["Samza-style jobs on Spark from this notebook. Commands:", ""]
    for command in LINE_COMMANDS.values():
        lines += [f"  {_usage(command)}", f"      {_summary(command)}"]
    for cell_command in CELL_COMMANDS.values():
        lines += [f"  {_usage(cell_command, cell=True)}", f"      {_summary(cell_command)}"]
    lines += [
        "",
        "APP: a notebook name bound to a StreamApplication or to a function of no arguments",
        "returning one, else package.module:attr. JOB: a notebook name bound to a Job; by default",
        "the job the last %samza run started. Each command returns what it shows:",
        "job = %samza run app --background. %samza help COMMAND explains one command.",
    ]
    return "\n".join(lines) + "\n"


# The tables come last: the help command is built over help_text, which reads them when called.
#: ``%samza NAME ...``, in the order help lists them.
LINE_COMMANDS: dict[str, LineCommand] = {
    "plan": plan,
    "run": run,
    "status": status,
    "show": show,
    "drain": drain,
    "grouper": grouper,
    "jobmodel": jobmodel,
    "stop": stop,
    "kill-processor": kill_processor,
    "add-processor": add_processor,
    "attach": attach,
    "config": config,
    "help": help_command(help_text),
}

#: ``%%samza NAME ...`` with a cell body.
CELL_COMMANDS: dict[str, CellCommand] = {
    "config": config_cell,
}
