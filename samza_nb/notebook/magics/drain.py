"""``%samza drain [JOB] [--wait]``: request a drain; returns the job's drain states."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, magic_arguments

from samza_nb.notebook.magics._args import job_argument
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.status_line import StatusLine
from samza_nb.notebook.widgets import DrainStatesWidget, settle_views

__all__ = ["command"]


@magic_arguments("samza drain")
@job_argument
@argument("--wait", action="store_true", help="wait until every task drained and the job stopped")
def command(session: Session, args: argparse.Namespace) -> DrainStatesWidget:
    """Drain a job (stop it with nothing in flight lost); returns its drain states."""
    job = session.job(args.job)
    if args.wait:
        # Seconds: every task drains its inputs, windows flush, each commits a last time.
        with StatusLine(
            f"draining {job.plan.app_name}: inputs stop, in-flight messages and windows finish",
            done_text=f"{job.plan.app_name} drained in {{seconds}} s",
        ):
            job.drain(wait=True)
    else:
        job.drain()
    settle_views(job)
    return DrainStatesWidget(job)
