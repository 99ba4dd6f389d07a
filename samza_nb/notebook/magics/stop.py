"""``%samza stop [JOB]``: stop a job after its current epoch; returns its JobStatus."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import magic_arguments

from samza_nb.job.handle import JobStatus
from samza_nb.notebook.magics._args import job_argument
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.widgets import settle_views

__all__ = ["command"]


@magic_arguments("samza stop")
@job_argument
def command(session: Session, args: argparse.Namespace) -> JobStatus:
    """Stop a job after the current epoch commits."""
    job = session.job(args.job)
    status = job.stop()
    settle_views(job)
    return status
