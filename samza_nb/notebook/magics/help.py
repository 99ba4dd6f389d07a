"""``%samza help [COMMAND]``: the list of commands, or one command's arguments."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from IPython.core.magic_arguments import argument, magic_arguments

from samza_nb.notebook.magics._session import Session

__all__ = ["HelpText", "help_command"]


class HelpText(str):
    """Help text that a notebook shows as text, not as a quoted string with ``\\n``s."""

    __slots__ = ()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def help_command(
    text_of: Callable[[str | None], str],
) -> Callable[[Session, argparse.Namespace], HelpText]:
    """The ``%samza help`` command over ``text_of(topic)``, the help text of the command table
    (given, not imported: the table lists this command)."""

    @magic_arguments("samza help")
    @argument("topic", nargs="?", metavar="COMMAND", help="a command to explain")
    def command(session: Session, args: argparse.Namespace) -> HelpText:
        """List the commands, or explain one."""
        return HelpText(text_of(args.topic))

    return command
