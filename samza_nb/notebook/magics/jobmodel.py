"""``%samza jobmodel [JOB]``: the job's JobModel (processors, their locations and tasks)."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import magic_arguments

from samza_nb.model import JobModel
from samza_nb.notebook.magics._args import job_argument
from samza_nb.notebook.magics._session import Session

__all__ = ["command"]


@magic_arguments("samza jobmodel")
@job_argument
def command(session: Session, args: argparse.Namespace) -> JobModel:
    """The job model: which processor runs which tasks, and where."""
    return session.job(args.job).job_model
