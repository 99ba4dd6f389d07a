"""``%samza status [JOB]``: the job's JobStatus."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import magic_arguments

from samza_nb.job.handle import JobStatus
from samza_nb.notebook.magics._args import job_argument
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.widgets import settle_views

__all__ = ["command"]


@magic_arguments("samza status")
@job_argument
def command(session: Session, args: argparse.Namespace) -> JobStatus:
    """State, epoch, processors and per-task progress of a job."""
    job = session.job(args.job)
    status = job.status()
    settle_views(job)
    return status
