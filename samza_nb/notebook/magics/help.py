"""``%samza help [COMMAND]``: the list of commands, or one command's arguments."""

from __future__ import annotations

import argparse
from typing import Any

from IPython.core.magic_arguments import argument, magic_arguments

from samza_nb.notebook.magics._session import Session

__all__ = ["HelpText", "command"]


class HelpText(str):
    """Help text that a notebook shows as text, not as a quoted string with ``\\n``s."""

    __slots__ = ()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


@magic_arguments("samza help")
@argument("topic", nargs="?", metavar="COMMAND", help="a command to explain")
def command(session: Session, args: argparse.Namespace) -> HelpText:
    """List the commands, or explain one."""
    # The registry imports this module, so it is read when help runs.
    from samza_nb.notebook.magics._commands import help_text

    return HelpText(help_text(args.topic))
