"""``%samza plan APP [--config KEY=VALUE ...]``: the application's ExecutionPlan."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, kwds, magic_arguments

from samza_nb.notebook.magics._args import config_argument
from samza_nb.notebook.magics._session import Session
from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["command"]


@magic_arguments("samza plan")
@kwds(usage="%(prog)s APP [--config KEY=VALUE ...]")
@argument("app", metavar="APP", help="a StreamApplication, a function building one, or module:attr")
@config_argument
def command(session: Session, args: argparse.Namespace) -> ExecutionPlan:
    """Plan an application: streams, partition counts, stages (draws itself)."""
    return session.app(args.app).plan(session.merged_config(args.config))
