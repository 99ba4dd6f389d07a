"""Argument types and arguments shared by several ``%samza`` commands.

Type functions raise :class:`argparse.ArgumentTypeError`, which IPython's argument parser turns
into a one-line :class:`~IPython.core.error.UsageError` naming the argument.
"""

from __future__ import annotations

import argparse
import sys

from IPython.core.magic_arguments import argument

from samza_nb.job.run_state import UNTIL
from samza_nb.secrecy import secret_exposed

__all__ = ["config_argument", "identifier", "job_argument", "key_value", "positive_int", "until"]

# run() checks these too, but only after the line parsed; here the error names --until.


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        msg = f"must be a whole number of at least 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(text)


def until(text: str) -> str | int:
    """``end-of-stream``, ``caught-up``, ``forever`` or a positive number of epochs."""
    if text in UNTIL:
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    msg = f"must be {', '.join(UNTIL)} or a positive number of epochs, got {text!r}"
    raise argparse.ArgumentTypeError(msg)


def key_value(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        # The usual slip: an option taking several KEY=VALUE written before APP swallows it.
        msg = f"must be written key=value, got {text!r} (write APP before --config)"
        raise argparse.ArgumentTypeError(msg)
    key, value = key.strip(), value.strip()
    warning = secret_exposed(key, value, "now in this notebook's text (and its saved file)")
    if warning is not None:
        print(warning, file=sys.stderr)
    return key, value


def identifier(text: str) -> str:
    if not text.isidentifier():
        msg = f"must be a Python name, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return text


job_argument = argument(
    "job",
    nargs="?",
    metavar="JOB",
    help="a Job variable of the notebook; default: the job the last %%samza run started",
)

config_argument = argument(
    "--config",
    nargs="+",
    action="extend",
    type=key_value,
    metavar="KEY=VALUE",
    help="config entries over the session's %%%%samza config",
)
