"""The stream systems of a plan's streams, as the runtime uses them: each checked to be a
samza_nb StreamSystem, with an error naming the stream when it is not."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from samza_nb.errors import StreamSystemError
from samza_nb.systems.base import StreamSystem

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["default_system_of", "system_of"]


def system_of(plan: ExecutionPlan, stream_id: str) -> StreamSystem:
    """The system of one of the plan's streams, as the runtime uses it."""
    return _checked(plan.streams[stream_id].system, f"stream {stream_id!r}")


def default_system_of(plan: ExecutionPlan) -> StreamSystem | None:
    """The plan's default system (changelogs and intermediate streams), if it has one."""
    system = plan.default_system
    return None if system is None else _checked(system, "the default system")


def _checked(system: Any, what: str) -> StreamSystem:
    if not isinstance(system, StreamSystem):
        msg = (
            f"{what}: system {getattr(system, 'name', system)!r} is a {type(system).__name__}, "
            "not a samza_nb StreamSystem; the runtime reads and writes only StreamSystems"
        )
        raise StreamSystemError(msg)
    return system
