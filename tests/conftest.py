"""Suite-wide ordering: with ``--dist loadfile`` each file runs whole on one worker, so the files
that take longest start first and the short ones fill in around them (engine/run-tests.sh passes
``--no-loadscope-reorder`` so xdist keeps this order)."""

from __future__ import annotations

from collections import defaultdict

import pytest

#: A rough cost per test by its marks, in seconds on this 2-core machine: only the order matters.
_COST = (("slow", 30.0), ("services", 3.0), ("spark", 2.0))
_OTHER = 0.1


def _cost(item: pytest.Item) -> float:
    return next((cost for mark, cost in _COST if item.get_closest_marker(mark)), _OTHER)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    per_file: dict[str, float] = defaultdict(float)
    for item in items:
        per_file[item.nodeid.split("::", 1)[0]] += _cost(item)
    items.sort(key=lambda item: -per_file[item.nodeid.split("::", 1)[0]])  # stable: file order kept
