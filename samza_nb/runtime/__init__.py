"""The engine: processors run epochs of tasks on Spark (see DESIGN.md, "Execution model").

``run`` and ``Job`` are loaded on first use so that importing a runtime submodule (control
messages, stores) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "DrainStatesView",
    "Job",
    "JobStatus",
    "ProcessorStatus",
    "job_home",
    "metadata_store_path",
    "run",
]

if TYPE_CHECKING:
    from samza_nb.runtime.job import (
        DrainStatesView,
        Job,
        JobStatus,
        ProcessorStatus,
        job_home,
        metadata_store_path,
        run,
    )


def __getattr__(name: str) -> Any:
    if name in __all__:
        from samza_nb.runtime import job

        return getattr(job, name)
    msg = f"module 'samza_nb.runtime' has no attribute {name!r}"
    raise AttributeError(msg)
