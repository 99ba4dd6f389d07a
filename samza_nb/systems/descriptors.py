"""Stream descriptors: what an application declares about its inputs and outputs.

Building a descriptor does no I/O. The planner reads ``system``, ``stream_id``, ``partitions``
and ``serde`` (a shorthand string or a serde object, resolved by the planner).

The classes are defined in :mod:`samza_nb.systems.base`, next to the
:class:`~samza_nb.systems.base.StreamSystem` that makes them (each refers to the other); this
module is their import path.
"""

from samza_nb.systems.base import (
    InputDescriptor,
    OutputDescriptor,
    StreamDescriptor,
    validate_stream_id,
)

__all__ = ["InputDescriptor", "OutputDescriptor", "StreamDescriptor", "validate_stream_id"]
