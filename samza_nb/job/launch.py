"""``run(app)``: plan an application, start its job and hand back the :class:`Job`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.job.handle import Job
from samza_nb.job.run_state import check_until

__all__ = ["run"]


def run(
    app: Any,
    config: Config | dict[str, Any] | None = None,
    *,
    processors: int | None = None,
    grouper: str | None = None,
    until: str | int = "end-of-stream",
    background: bool = False,
    clock: Callable[[], int] | None = None,
    executor: str = "spark",
    lease_wait: bool = False,
    lease_timeout: float | None = None,
) -> Job:
    """Run ``app``; returns the Job (finished unless ``background=True``).

    ``processors`` overrides ``job.container.count``; ``grouper`` overrides
    ``task.name.grouper.factory``; ``executor="local"`` runs task epochs in this process
    instead of on Spark (tests; see :func:`samza_nb.testing.run_local`). One run of a job at a
    time: another run holding the job's lease fails this one at once, naming it, unless
    ``lease_wait`` (then up to ``lease_timeout`` seconds).
    """
    check_until(until)
    if not callable(getattr(app, "plan", None)):
        msg = f"run() takes a StreamApplication, got {type(app).__name__} {app!r:.60}"
        raise ConfigError(msg)
    job = Job(
        app,
        Config.of(config),
        processors=processors,
        grouper=grouper,
        until=until,
        clock=clock,
        executor=executor,
        lease_wait=lease_wait,
        lease_timeout=lease_timeout,
    )
    return job.start(background)
