"""What a processor tells the process hosting it (the :class:`~samza_nb.job.handle.Job`): epochs
committed, a task done, nothing to do, a drain seen, its loop ended, and whether a fenced commit
means waiting for the coordinator's next model or stopping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from samza_nb.runtime.epoch import EpochResult
    from samza_nb.runtime.processor.processor import StreamProcessor

__all__ = ["ProcessorEvents"]


class ProcessorEvents(Protocol):
    """What a processor tells the job hosting it."""

    def epoch_committed(self, processor: StreamProcessor, results: list[EpochResult]) -> None:
        """Results of tasks whose checkpoints were just committed."""

    def is_done(self, task: str) -> bool:
        """Whether ``task`` reached end-of-stream or drained (it needs no more epochs)."""

    def processor_idle(self, processor: StreamProcessor) -> None:
        """The processor found nothing to do (no epoch ran): a job that runs until caught up
        may be done although no epoch committed (inputs that hold nothing)."""

    def drain_seen(self, processor: StreamProcessor) -> None:
        """The processor's DrainMonitor saw a drain notification for the job's run."""

    def processor_stopped(self, processor: StreamProcessor) -> None:
        """The processor's loop ended (``processor.error`` says whether it failed)."""

    def rejoins_when_fenced(self) -> bool:
        """Whether a fenced commit means "wait for the coordinator's next model" (a distributed
        coordinator rejoins with a new session) rather than "stop" (a newer incarnation)."""
