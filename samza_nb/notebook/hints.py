"""Error hints in a notebook's words.

The runtime's messages tell a shell user what to type (``samza-nb reset MODULE:APP --yes``).
An app defined in a notebook has no ``MODULE:APP``; where a person reads an error in a notebook,
such a hint becomes the call that does the same from a cell. Only the notebook layer rewrites:
the CLI and the logs keep the runtime's words.
"""

from __future__ import annotations

import re

__all__ = ["in_notebook_words"]

#: ``samza-nb reset MODULE:APP [--yes]``, with the runtime's "(reset_job(app.plan()) ... in
#: Python[; more])" after it when there is one; ``more`` is kept.
_RESET = re.compile(
    r"`samza-nb reset MODULE:APP(?: --yes)?`"
    r"(?: \(reset_job\(app\.plan\(\)\)(?: from samza_nb\.job\.reset)? in Python"
    r"(?:; (?P<more>[^)]*))?\))?"
)
_RESET_CALL = "`samza_nb.job.reset.reset_job(app.plan())`"
#: ``samza-nb drain MODULE:APP --wait`` (reset refusing a running job).
_DRAIN = re.compile(r"\(?samza-nb drain MODULE:APP --wait\)?")
_DRAIN_CALL = "(job.drain(wait=True), or %samza drain --wait)"


def _reset(match: re.Match[str]) -> str:
    more = match.group("more")
    return _RESET_CALL + (f" ({more})" if more else "")


def in_notebook_words(text: str) -> str:
    """``text`` with shell commands that need ``MODULE:APP`` replaced by what does the same
    in a cell: ``samza_nb.job.reset.reset_job(app.plan())``, ``job.drain(wait=True)``."""
    return _DRAIN.sub(_DRAIN_CALL, _RESET.sub(_reset, text))
