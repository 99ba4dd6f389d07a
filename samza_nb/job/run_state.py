"""Where one run of a job stands: its state, its error, the tasks that ended, its run id; and
how long a run goes (``until``).

One RunState is shared by the parts of a :class:`~samza_nb.job.handle.Job`: its progress
changes it as processors report, its processor host and its views read it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from samza_nb.errors import ConfigError

__all__ = ["ENDED", "UNTIL", "RunState", "check_until"]

#: How long a run goes: to the end of its inputs, until it has read what there is, or forever
#: (or a positive number of epochs).
UNTIL = ("end-of-stream", "caught-up", "forever")

#: The states a run ends in; before, it is "created" or "running".
ENDED = ("finished", "stopped", "failed", "drained")


@dataclass(eq=False)
class RunState:
    """The mutable state of one run; ``lock`` guards what processors report into it."""

    run_id: str
    state: str = "created"
    error: BaseException | None = None
    #: Tasks that reached end-of-stream or drained in this run (they need no more epochs).
    done_tasks: set[str] = field(default_factory=set)
    stop_requested: bool = False
    #: The highest processor epoch when the first processor saw the drain notification.
    drain_seen_epoch: int | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def ended(self) -> bool:
        return self.state in ENDED


def check_until(until: Any) -> None:
    """``until`` as run() takes it, or a ConfigError naming the choices."""
    if not (isinstance(until, int) and not isinstance(until, bool) and until > 0) and until not in UNTIL:
        msg = f"until must be one of {list(UNTIL)} or a positive number of epochs, got {until!r}"
        raise ConfigError(msg)
