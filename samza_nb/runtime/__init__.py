"""The engine: processors run epochs of tasks on Spark (see DESIGN.md, "Execution model")."""

from samza_nb.runtime.job import Job, JobStatus, ProcessorStatus, run

__all__ = ["Job", "JobStatus", "ProcessorStatus", "run"]
