"""The grouper explorer's draft: the live processors a proposal is for (processor id → location),
and the rules for editing it before Apply (notebook/widgets/grouper_explorer.py).

New ids continue after the largest numeric id the job or the draft knows, as
:meth:`~samza_nb.job.handle.Job.add_processor` numbers them: killed ids are not reused before
Apply, because the job adds processors before it kills any. A draft keeps at least one
processor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from samza_nb.errors import ConfigError
from samza_nb.model import java_sorted

__all__ = ["ProcessorDraft"]


class ProcessorDraft(dict[str, str]):
    """Processor id → location, edited by the explorer's Kill, Add, processors and locations."""

    def kill(self, processor_id: str) -> None:
        if processor_id not in self:
            msg = f"no processor {processor_id!r} in the draft; processors are {java_sorted(self)}"
            raise ConfigError(msg)
        if len(self) == 1:
            msg = "cannot kill the last processor; a job needs at least one"
            raise ConfigError(msg)
        del self[processor_id]

    def add(self, location: str | None, *, current: Iterable[str]) -> str:
        """A new processor at ``location`` (blank: ``host-<id>``); returns its id. ``current``:
        the ids of the job's processors now."""
        known = {*current, *self}
        new_id = str(max((int(p) for p in known if p.isdigit()), default=-1) + 1)
        self[new_id] = (location or "").strip() or f"host-{new_id}"
        return new_id

    def resize(self, wanted: int, location: str | None, *, current: Iterable[str]) -> tuple[list[str], list[str]]:
        """``wanted`` processors: new ones at ``location``, or the highest ids killed; returns
        (added, killed)."""
        known = list(current)
        added = [self.add(location, current=known) for _ in range(wanted - len(self))]
        killed = java_sorted(self)[wanted:]
        for processor_id in killed:
            del self[processor_id]
        return added, killed

    def relocate(self, locations: Sequence[str]) -> None:
        """One location per processor in id order, cycled."""
        for index, processor_id in enumerate(java_sorted(self)):
            self[processor_id] = locations[index % len(locations)]
