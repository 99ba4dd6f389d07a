"""What an operator can do about an expected failure the ``samza-nb`` command reports.

The error itself says what failed and where; a hint is the way out, added to that one line
when the failure has a known one.
"""

from __future__ import annotations

import sqlite3

from samza_nb.errors import MetadataStoreError, SamzaNbError

__all__ = ["recovery_hint"]


def recovery_hint(error: SamzaNbError, app: str | None) -> str:
    """The way out of ``error`` (starting with ``"; "``), or "" when there is no known one."""
    cause = error.__cause__
    # A damaged SQLite file (truncated, overwritten) is a plain DatabaseError; a busy or locked
    # one is an OperationalError, which waiting or stopping the other process cures.
    if isinstance(error, MetadataStoreError) and type(cause) is sqlite3.DatabaseError:
        reset = f"samza-nb reset {app} --yes" if app else "samza-nb reset MODULE:APP --yes"
        return (
            "; the file is damaged (truncated or overwritten): put back a copy of it, or move it "
            f"away and start the job over from its inputs with `{reset}`"
        )
    return ""
