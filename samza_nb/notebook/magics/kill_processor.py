"""``%samza kill-processor ID [JOB]``: remove a processor; returns the new JobModel."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, magic_arguments

from samza_nb.model import JobModel
from samza_nb.notebook.magics._args import job_argument
from samza_nb.notebook.magics._session import Session

__all__ = ["command"]


@magic_arguments("samza kill-processor")
@argument("processor_id", metavar="ID", help="the processor id, as in %%samza jobmodel")
@job_argument
def command(session: Session, args: argparse.Namespace) -> JobModel:
    """Kill a processor; its tasks move to the others per the job's grouper."""
    return session.job(args.job).kill_processor(args.processor_id)
