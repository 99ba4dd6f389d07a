"""What ``%samza`` remembers in one shell, and how APP and JOB arguments become objects."""

from __future__ import annotations

import ast
import linecache
import sys
from typing import TYPE_CHECKING

from samza_nb.api import StreamApplication
from samza_nb.api.loading import as_application, load_application
from samza_nb.config import Config
from samza_nb.errors import ConfigError, JobError
from samza_nb.job.handle import Job

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["Session", "assignment_target"]


def assignment_target(shell: InteractiveShell) -> str | None:
    """The name ``name = %samza …`` assigns to, read from the line of the cell that is calling
    the magic now (IPython turns it into ``name = get_ipython().run_line_magic(…)``)."""
    cells = getattr(shell.compile, "_filename_map", {})
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename in cells:
            try:
                statement = ast.parse(linecache.getline(filename, frame.f_lineno).strip())
            except SyntaxError:
                return None
            node = statement.body[0] if len(statement.body) == 1 else None
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and "run_line_magic" in ast.unparse(node.value)
            ):
                return node.targets[0].id
            return None
        frame = frame.f_back  # type: ignore[assignment]
    return None


class Session:
    """The state of the magics in one shell: the config set by ``%%samza config`` and the job
    the last ``%samza run`` started.

    Names are looked up in the shell's user namespace at every call, so a cell that rebinds
    ``app`` or ``job`` is seen by the next magic.
    """

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.config = Config()
        self.last_job: Job | None = None

    # -- APP -------------------------------------------------------------------------------
    def app(self, name: str) -> StreamApplication:
        """The application ``name`` stands for: a notebook name bound to a StreamApplication
        or to a function of no arguments returning one, else ``package.module:attribute``."""
        namespace = self.shell.user_ns
        if name in namespace:
            return as_application(namespace[name], name)
        if ":" in name:
            return load_application(name)
        apps = sorted(
            key
            for key, value in namespace.items()
            if isinstance(value, StreamApplication) and not key.startswith("_")
        )
        known = f"; applications in this notebook: {', '.join(apps)}" if apps else ""
        msg = (
            f"no application {name!r}: it is not a name in this notebook and not "
            f"package.module:attribute{known}"
        )
        raise ConfigError(msg)

    # -- JOB -------------------------------------------------------------------------------
    def job(self, name: str | None) -> Job:
        """The Job bound to ``name`` in the notebook, or the last one ``%samza run`` started."""
        if name is None:
            if self.last_job is None:
                msg = "no job yet: start one with %samza run APP, or name a Job variable"
                raise JobError(msg)
            return self.last_job
        namespace = self.shell.user_ns
        if name not in namespace:
            msg = f"no job {name!r}: it is not a name in this notebook"
            raise JobError(msg)
        value = namespace[name]
        if not isinstance(value, Job):
            msg = f"{name} is a {type(value).__name__}, not a Job (jobs come from run() or %samza run)"
            raise JobError(msg)
        return value

    def started(self, job: Job) -> None:
        """Record a job ``%samza run`` started: it becomes the default JOB."""
        self.last_job = job

    def bind_result(self, value: object) -> str | None:
        """Bind ``value`` to the name the running magic's result was to be assigned to, for
        a magic that raises instead of returning (``job = %samza run app`` that failed keeps
        ``job``). Returns the name, None when the magic's line assigns nothing."""
        name = assignment_target(self.shell)
        if name is not None:
            self.shell.user_ns[name] = value
        return name

    # -- config ----------------------------------------------------------------------------
    def merged_config(self, overrides: list[tuple[str, str]] | None) -> Config:
        """The session config with ``--config key=value`` overrides on top (keys validated)."""
        return self.config.with_overrides(dict(overrides or ()))
