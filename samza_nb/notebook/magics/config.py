"""``%%samza config [NAME]``: set the session's config from a block of Samza-style properties;
``%samza config`` shows it. ``%samza run`` and ``%samza plan`` use it under their ``--config``."""

from __future__ import annotations

import argparse
import sys

from IPython.core.magic_arguments import argument, magic_arguments

from samza_nb.config import Config, properties_config
from samza_nb.notebook.magics._args import identifier
from samza_nb.notebook.magics._session import Session
from samza_nb.secrecy import secret_exposed

__all__ = ["cell_command", "command"]


@magic_arguments("samza config")
def command(session: Session, args: argparse.Namespace) -> Config:
    """The session's config, as set by the last %%samza config cell."""
    return session.config


@magic_arguments("samza config")
@argument("name", nargs="?", type=identifier, metavar="NAME", help="also bind the Config to NAME")
def cell_command(session: Session, args: argparse.Namespace, cell: str) -> Config:
    """Replace the session's config with the cell's key=value lines (# comments allowed)."""
    # Line 1 of the cell is the %%samza config line itself.
    config = properties_config(cell, source="%%samza config", first_line=2)
    for key, value in config.items():
        warning = secret_exposed(key, value, "now in this notebook's text (and its saved file)")
        if warning is not None:
            print(warning, file=sys.stderr)
    session.config = config
    if args.name is not None:
        session.shell.user_ns[args.name] = config
    return config
