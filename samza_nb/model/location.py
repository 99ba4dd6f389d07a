"""LocationId: where a processor runs, in the sense of "can share local state" (SAMZA.md §9).

Processors with the same location id can read and write each other's local stores, so a task
keeps its state if it lands anywhere at its previous location. A location id is a plain,
non-empty string (a host name by default); the alias documents intent in signatures.
"""

from __future__ import annotations

from typing import TypeAlias

from samza_nb.errors import ModelError

__all__ = ["LocationId", "check_location_id"]

LocationId: TypeAlias = str


def check_location_id(value: object, *, what: str = "location id") -> LocationId:
    """Return ``value`` if it is a usable location id, else raise ModelError naming ``what``."""
    if not isinstance(value, str) or not value.strip():
        msg = f"{what} must be a non-empty string, got {value!r}"
        raise ModelError(msg)
    return value
