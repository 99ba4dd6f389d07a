"""``%samza show [TARGET] [-n N] [--job JOB]``: the latest messages of a stream or operator, or
the job at a glance, live while the job runs."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, magic_arguments

from samza_nb.notebook.magics._args import positive_int
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.widgets.show_view import ShowView

__all__ = ["command"]


@magic_arguments("samza show")
@argument(
    "target",
    nargs="?",
    metavar="TARGET",
    help="a stream id or operator id (its op_id= suffices); none: the job at a glance",
)
@argument("-n", type=positive_int, default=20, metavar="N", help="messages to show (default 20)")
@argument("--job", metavar="JOB", help="a Job variable; default: the job the last %%samza run started")
def command(session: Session, args: argparse.Namespace) -> ShowView:
    """Show the latest messages of a stream or operator (or the job at a glance), live."""
    return ShowView(session.job(args.job), args.target, args.n)
