"""The Job: what ``run(app)`` returns, above the runtime (DESIGN.md, "Layers").

``run`` plans an application, prepares its streams and metadata store, starts its coordinator
and the processors it hosts (:mod:`samza_nb.runtime.processor`), and hands back a
:class:`Job` that answers status, metrics, drain and the views. ``run`` and ``Job`` are loaded
on first use so that importing a part of the job (its status, its home) stays light.
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
    from samza_nb.job.handle import (
        DrainStatesView,
        Job,
        JobStatus,
        ProcessorStatus,
        job_home,
        metadata_store_path,
    )
    from samza_nb.job.launch import run


def __getattr__(name: str) -> Any:
    if name in __all__:
        from importlib import import_module

        return getattr(import_module("samza_nb.job.launch" if name == "run" else "samza_nb.job.handle"), name)
    msg = f"module 'samza_nb.job' has no attribute {name!r}"
    raise AttributeError(msg)
