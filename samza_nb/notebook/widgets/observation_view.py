"""ObservationView: one read of an attached job's coordination state, as it was then.

``%samza attach`` draws the job live (AttachedJobWidget), and a live view follows the job to
its end: after Run All every live view shows the drained job. What ``job.observe()`` returned
at a step (after a kill, after a restart) is drawn by this static view instead, which keeps
that moment: the processors and the leader, the job-model versions with their barriers and
the tasks each moved, and task → processor → location beside where each task last ran. Plain
HTML, so a saved notebook shows it as it was. A cell that returns a JobObservation after
``%samza attach`` shows one; the live widget draws its tables with the same rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from samza_nb.notebook.widgets._html import html_table, paragraph, text_table

if TYPE_CHECKING:
    from samza_nb.coordination.observation import JobObservation

__all__ = ["ObservationView", "processor_rows", "task_rows", "version_rows"]

PROCESSOR_HEADERS = ["processor", "location", "role", "tasks"]
VERSION_HEADERS = ["version", "barrier", "joined", "moved tasks"]
TASK_HEADERS = ["task", "processor", "location", "last ran at"]


def processor_rows(observation: JobObservation) -> list[list[str]]:
    tasks: dict[str, int] = {}
    for pid, _location in observation.assignment.values():
        tasks[pid] = tasks.get(pid, 0) + 1
    return [
        [p.processor_id, p.location_id, "leader" if p.leader else "follower", str(tasks.get(p.processor_id, 0))]
        for p in observation.processors
    ]


def version_rows(observation: JobObservation) -> list[list[str]]:
    """Newest first."""
    return [
        [
            v.version,
            v.barrier or "–",
            f"{len(v.joined)} of {len(v.expected)}",
            ", ".join(v.moved) if v.moved else "–",
        ]
        for v in reversed(observation.versions)
    ]


def task_rows(observation: JobObservation) -> list[list[str]]:
    return [
        [task, pid, location or "–", observation.task_locality.get(task, "–")]
        for task, (pid, location) in observation.assignment.items()
    ]


class ObservationView:
    """A static drawing of ``observation`` (``_repr_html_``; ``snapshot_text`` for terminals)."""

    def __init__(self, observation: JobObservation) -> None:
        self.observation = observation

    def summary(self) -> str:
        seen = self.observation
        processors = ", ".join(p.processor_id for p in seen.processors) or "none"
        return (
            f"as observed then: processors {processors}; leader {seen.leader or '–'}; "
            f"model version {seen.latest or '–'} (barrier {seen.barrier or '–'}, "
            f"active {seen.active or '–'}); read from {seen.where}"
        )

    def _repr_html_(self) -> str:
        seen = self.observation
        return (
            '<div class="samza-observation">'
            + paragraph(self.summary(), bold=True)
            + html_table(PROCESSOR_HEADERS, processor_rows(seen), caption="processors")
            + html_table(VERSION_HEADERS, version_rows(seen), caption="job model versions (newest first)")
            + html_table(TASK_HEADERS, task_rows(seen), caption="tasks in the newest model")
            + "</div>"
        )

    def snapshot_text(self) -> str:
        seen = self.observation
        return "\n".join(
            [
                self.summary(),
                "processors:",
                text_table(PROCESSOR_HEADERS, processor_rows(seen)),
                "job model versions (newest first):",
                text_table(VERSION_HEADERS, version_rows(seen)),
                "tasks in the newest model:",
                text_table(TASK_HEADERS, task_rows(seen)),
            ]
        )

    def __repr__(self) -> str:
        return f"ObservationView({self.observation.where!r}, version {self.observation.latest})"
