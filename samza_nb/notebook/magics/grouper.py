"""``%samza grouper [JOB]``: the grouper explorer for a job, starting on the job's grouper."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import magic_arguments

from samza_nb.notebook.magics._args import job_argument
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.widgets import GrouperExplorer

__all__ = ["command"]


@magic_arguments("samza grouper")
@job_argument
def command(session: Session, args: argparse.Namespace) -> GrouperExplorer:
    """Explore the job's grouping: processors, tasks, moves; kill or add processors."""
    return GrouperExplorer(job=session.job(args.job))
