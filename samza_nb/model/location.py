"""LocationId: where a processor runs, in the sense of "can share local state" (SAMZA.md §9).

Processors with the same location id can read and write each other's local stores, so a task
keeps its state if it lands anywhere at its previous location. A location id is a plain,
non-empty string (a host name by default); the alias documents intent in signatures. A
location's stores live in a folder named after it with path-safe characters
(:func:`location_folder`), so two locations whose folder names are the same cannot both run
(:func:`check_location_folders`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

from samza_nb.errors import ModelError

__all__ = ["LocationId", "check_location_folders", "check_location_id", "location_folder", "path_safe"]

LocationId: TypeAlias = str


def check_location_id(value: object, *, what: str = "location id") -> LocationId:
    """Return ``value`` if it is a usable location id, else raise ModelError naming ``what``."""
    if not isinstance(value, str) or not value.strip():
        msg = f"{what} must be a non-empty string, got {value!r}"
        raise ModelError(msg)
    return value


def path_safe(part: str) -> str:
    """``part`` as one path component: letters, digits, ``-``, ``_`` and ``.`` kept, anything
    else ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in part)


def location_folder(location_id: LocationId) -> str:
    """The folder of ``location_id``'s stores under a store root."""
    return path_safe(location_id)


def check_location_folders(locations: Iterable[LocationId]) -> None:
    """Refuse distinct locations that would share a store folder (``rack-1/host-7`` and
    ``rack-1:host-7``): an active task and its standby there would open one store."""
    seen: dict[str, LocationId] = {}
    for location in sorted(set(locations)):
        folder = location_folder(location)
        other = seen.setdefault(folder, location)
        if other != location:
            msg = (
                f"locations {other!r} and {location!r} would share the store folder {folder!r}: "
                "give locations that differ in letters, digits, '-', '_' or '.'"
            )
            raise ModelError(msg)
