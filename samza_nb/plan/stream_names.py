"""Stream names a system cannot hold, refused when the job is planned.

A plan names streams of its own: an intermediate stream per shuffle
(``<app>-<job>-partition_by-<op id>``) and a changelog per store
(``<app>-<job>-<store>-changelog``), both in the job's default system. A system may bound the
length of a stream's name (``longest_stream_id``: Kafka's topic names are at most 249
characters); a name over it would fail only at run time, when the stream is created.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from samza_nb.errors import PlanError
from samza_nb.plan.operators import StreamSystemLike

__all__ = ["changelog_stream_id", "check_stream_name_lengths", "longest_stream_id"]


def changelog_stream_id(app_name: str, job_id: str, store: str) -> str:
    """The changelog stream of ``store`` (one partition per task, in the default system)."""
    return f"{app_name}-{job_id}-{store}-changelog"


def longest_stream_id(system: StreamSystemLike | None) -> int | None:
    """The longest stream name ``system`` holds (None: no bound)."""
    longest = getattr(system, "longest_stream_id", None)
    return longest if isinstance(longest, int) else None


def check_stream_name_lengths(
    app_name: str,
    intermediates: Mapping[str, tuple[str, StreamSystemLike]],
    changelogs: Iterable[tuple[str, str]],
    default_system: StreamSystemLike | None,
) -> None:
    """Refuse a plan whose intermediate streams (``stream id -> (physical name, system)``) or
    store changelogs (``(store, changelog stream id)``, in ``default_system``) have names their
    system cannot hold."""
    named: list[tuple[str, str, StreamSystemLike | None]] = [
        (f"the intermediate stream of {stream_id!r}", physical, system)
        for stream_id, (physical, system) in intermediates.items()
    ]
    named += [(f"the changelog of store {store!r}", changelog, default_system) for store, changelog in changelogs]
    for what, name, system in named:
        longest = longest_stream_id(system)
        if system is None or longest is None or len(name) <= longest:
            continue
        msg = (
            f"{what} would be named {name[:60]!r}… ({len(name)} characters) in system "
            f"{system.name!r}, which holds names of at most {longest} characters (the name is "
            f"<app>-<job>-…): use a shorter app name (now {len(app_name)} characters), job id, "
            "op_id or table name"
        )
        raise PlanError(msg)
