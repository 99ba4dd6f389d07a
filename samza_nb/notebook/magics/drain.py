"""``%samza drain [JOB] [--wait]``: request a drain; returns the job's drain states."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, magic_arguments

from samza_nb.notebook.magics._args import job_argument
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.widgets import DrainStatesWidget, settle_views

__all__ = ["command"]


@magic_arguments("samza drain")
@job_argument
@argument("--wait", action="store_true", help="wait until every task drained and the job stopped")
def command(session: Session, args: argparse.Namespace) -> DrainStatesWidget:
    """Drain a job (stop it with nothing in flight lost); returns its drain states."""
    job = session.job(args.job)
    job.drain(wait=args.wait)
    settle_views(job)
    return DrainStatesWidget(job)
