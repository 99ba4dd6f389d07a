"""NEXMark on samza_nb: the standard event generator and queries q0, q1, q2, q3, q5, q7, q8.

``generator`` writes persons, auctions and bids (1 : 3 : 46), padded to NEXMark's average
sizes, with event-time timestamps and source watermarks; ``queries`` builds each query as a
StreamApplication; ``reference`` computes each query's result in plain Python (the tests
compare them; ``bench/nexmark.py`` times them).
"""

from samza_nb.examples.nexmark.generator import generate, write_events
from samza_nb.examples.nexmark.queries import QUERIES, build_query
from samza_nb.examples.nexmark.reference import reference

__all__ = ["QUERIES", "build_query", "generate", "reference", "write_events"]
