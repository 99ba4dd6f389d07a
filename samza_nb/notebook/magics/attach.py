"""``%samza attach URL [APP] [--job-id ID]``: observe a distributed job started elsewhere."""

from __future__ import annotations

import argparse

from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from samza_nb.config import Config
from samza_nb.coordination.observation import JobObservation
from samza_nb.notebook.magics._args import config_argument
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.magics.attach_handle import AttachedJob
from samza_nb.notebook.magics.attach_schemes import attach
from samza_nb.notebook.widgets.attached_job import AttachedJobWidget
from samza_nb.notebook.widgets.observation_view import ObservationView

__all__ = ["command"]


@magic_arguments("samza attach")
@argument("url", metavar="URL", help="zookeeper://HOST:PORT/chroot or azure://ACCOUNT (query: ?app=NAME&job=ID)")
@argument("app", nargs="?", metavar="APP", help="the application: a notebook name bound to one, or its app.name")
@argument("--job-id", help="the job id (job.id; default 1)")
@config_argument
def command(session: Session, args: argparse.Namespace) -> AttachedJob:
    """Attach to a running distributed job (never joining it): a live view of its processors,
    leader, job models, barrier and assignment; drain it from the view or with .drain()."""
    name = args.app
    job_id = args.job_id
    if name is not None and name in session.shell.user_ns:
        # A notebook application: its app name and job id name the job.
        plan = session.app(name).plan(session.config)
        name, job_id = plan.app_name, job_id or plan.job_id
    overrides = Config(dict(args.config or ()))
    _show_as_widget(session)
    return attach(args.url, name, job_id=job_id, config=session.config.with_overrides(overrides.to_dict()))


def _show_as_widget(session: Session) -> None:
    """An AttachedJob a cell returns is drawn as a live AttachedJobWidget; a JobObservation
    (``job.observe()``) as an ObservationView, which keeps the moment it was read."""
    formatters = session.shell.display_formatter
    if formatters is not None:
        formatters.ipython_display_formatter.for_type(
            AttachedJob, lambda handle: display(AttachedJobWidget(handle))
        )
        formatters.formatters["text/html"].for_type(
            JobObservation, lambda seen: ObservationView(seen)._repr_html_()
        )
        formatters.formatters["text/plain"].for_type(
            JobObservation, lambda seen, printer, _cycle: printer.text(ObservationView(seen).snapshot_text())
        )
