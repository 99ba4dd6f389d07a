"""``%samza run APP [--processors N] [--grouper NAME] [--until U] [--background]
[--config KEY=VALUE ...]``: start the application; returns the Job."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, kwds, magic_arguments
from IPython.display import display

from samza_nb.grouping import get_grouper, grouper_names
from samza_nb.notebook.magics._args import config_argument, positive_int, until
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.widgets import RunProgress
from samza_nb.runtime.job import Job, run

__all__ = ["command"]


@magic_arguments("samza run")
@kwds(
    usage=(
        "%(prog)s APP [--processors N] [--grouper NAME] [--until U] [--background] "
        "[--config KEY=VALUE ...]"
    )
)
@argument("app", metavar="APP", help="a StreamApplication, a function building one, or module:attr")
@argument("--processors", type=positive_int, default=1, metavar="N", help="processors (default 1)")
@argument(
    "--grouper",
    default="group-by-container-count",
    metavar="NAME",
    help="task grouper (default group-by-container-count)",
)
@argument(
    "--until",
    type=until,
    default="end-of-stream",
    metavar="U",
    help="end-of-stream (default), caught-up, forever or a number of epochs",
)
@argument("--background", action="store_true", help="return at once; the job runs in a thread")
@config_argument
def command(session: Session, args: argparse.Namespace) -> Job:
    """Run an application on Spark and return its Job."""
    # Everything the user typed is checked before run() creates streams or a metadata store.
    if args.grouper not in grouper_names():
        get_grouper(args.grouper)  # raises the registry's error: did-you-mean and known names
    app = session.app(args.app)
    config = session.merged_config(args.config)
    job = run(
        app,
        config,
        processors=args.processors,
        grouper=args.grouper,
        until=args.until,
        background=args.background,
    )
    session.started(job)
    if args.background:
        display(RunProgress(job))
    return job
