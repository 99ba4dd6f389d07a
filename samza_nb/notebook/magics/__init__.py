"""The ``%samza`` line magic and ``%%samza`` cell magic (``%load_ext samza_nb``).

Thin wrappers over the Python API, one module per command; each returns the object it shows::

    %%samza config
    job.drain-monitor.poll.interval.ms=200

    plan = %samza plan app
    job = %samza run app --processors 2 --background
    %samza status
    %samza drain --wait

``%samza help`` lists the commands. Expected errors are one line in notebooks and full
tracebacks under papermill and in tests (see :mod:`samza_nb.notebook.magics._core`).
"""

from samza_nb.notebook.magics._core import SamzaMagics
from samza_nb.notebook.magics._session import Session
from samza_nb.notebook.magics.help import HelpText

__all__ = ["HelpText", "SamzaMagics", "Session"]
