"""``%samza add-processor [--location L] [JOB]``: add a processor; returns the new JobModel."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, magic_arguments

from samza_nb.model import JobModel
from samza_nb.notebook.magics._args import job_argument
from samza_nb.notebook.magics._session import Session

__all__ = ["command"]


@magic_arguments("samza add-processor")
@argument("--location", metavar="L", help="its location id (default: this host's)")
@job_argument
def command(session: Session, args: argparse.Namespace) -> JobModel:
    """Add a processor; the job's grouper gives it tasks."""
    return session.job(args.job).add_processor(args.location)
