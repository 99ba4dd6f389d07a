"""``%samza run APP [--processors N] [--grouper NAME] [--until U] [--background]
[--config KEY=VALUE ...]``: start the application, show its progress and return the Job
(once it ended, unless ``--background``)."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, kwds, magic_arguments
from IPython.display import display

from samza_nb.errors import JobInterruptedError
from samza_nb.grouping import get_grouper, grouper_names
from samza_nb.job.handle import Job
from samza_nb.job.launch import run
from samza_nb.notebook.magics._args import config_argument, positive_int, until
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.widgets import RunProgress, settle_views

__all__ = ["command"]


@magic_arguments("samza run")
@kwds(
    usage=(
        "%(prog)s APP [--processors N] [--grouper NAME] [--until U] [--background] "
        "[--config KEY=VALUE ...]"
    )
)
@argument("app", metavar="APP", help="a StreamApplication, a function building one, or module:attr")
@argument(
    "--processors",
    type=positive_int,
    default=None,
    metavar="N",
    help="processors (default: the config's job.container.count, 1 unless set)",
)
@argument(
    "--grouper",
    default=None,
    metavar="NAME",
    help="task grouper (default: the config's task.name.grouper.factory, group-by-container-count unless set)",
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
    """Run an application on Spark, show its progress and return its Job."""
    # argparse checked --processors and --until; the grouper name, APP and the --config keys
    # are checked here, before run() is called. run() checks the rest: the plan and that the
    # inputs exist before the job writes anything, but whether the grouper can group the tasks
    # over N processors, and config values such as locationid.provider.factory, only after the
    # job opened its metadata store and created its output and intermediate streams.
    if args.grouper is not None and args.grouper not in grouper_names():
        get_grouper(args.grouper)  # raises the registry's error: did-you-mean and known names
    app = session.app(args.app)
    config = session.merged_config(args.config)
    # Always started in a thread, so the progress view is live while this cell waits.
    try:
        job = run(
            app,
            config,
            processors=args.processors,
            grouper=args.grouper,
            until=args.until,
            background=True,
        )
    except JobInterruptedError as interrupted:  # Ctrl-C while Spark started: the job stopped
        if isinstance(interrupted.job, Job):
            session.started(interrupted.job)
            session.bind_result(interrupted.job)
        raise
    session.started(job)
    display(RunProgress(job))
    if args.background:
        return job
    try:
        job.wait()  # raises the job's error when it failed
    except KeyboardInterrupt as interrupt:
        # Interrupting the cell stops the job after its current epoch (checkpoint committed)
        # rather than leaving it running unseen in its thread.
        job.stop()
        session.bind_result(job)
        raise job.interrupted() from interrupt
    except BaseException:
        session.bind_result(job)
        raise
    finally:
        # Finished, failed or stopped: the view shows the final state before the cell ends.
        settle_views(job)
    return job
