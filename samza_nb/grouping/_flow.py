"""A small integer max-flow (Dinic) for the aggregated networks of the groupers.

The networks built by the groupers have a handful of layers and at most a few thousand edges
(processors, locations, a couple of pooling nodes), so recursion depth stays tiny.
"""

from __future__ import annotations

from collections import deque

__all__ = ["FlowNetwork"]


class FlowNetwork:
    """A directed network with integer capacities; nodes are 0 … n-1."""

    __slots__ = ("_adjacent", "_capacity", "_head")

    def __init__(self, node_count: int) -> None:
        self._adjacent: list[list[int]] = [[] for _ in range(node_count)]
        self._head: list[int] = []
        self._capacity: list[int] = []

    def add_edge(self, source: int, target: int, capacity: int) -> int:
        """Add an edge and return its id (use it with :meth:`flow`)."""
        edge = len(self._head)
        self._head.extend((target, source))
        self._capacity.extend((capacity, 0))
        self._adjacent[source].append(edge)
        self._adjacent[target].append(edge + 1)
        return edge

    def flow(self, edge: int) -> int:
        """The flow on ``edge`` after :meth:`max_flow` (the residual of its reverse edge)."""
        return self._capacity[edge ^ 1]

    def max_flow(self, source: int, sink: int) -> int:
        """Push the maximum flow from ``source`` to ``sink`` and return its value."""
        total = 0
        while True:
            level = self._levels(source)
            if level[sink] < 0:
                return total
            cursor = [0] * len(self._adjacent)
            while True:
                pushed = self._push(source, sink, 1 << 62, level, cursor)
                if not pushed:
                    break
                total += pushed

    def _levels(self, source: int) -> list[int]:
        head, capacity, adjacent = self._head, self._capacity, self._adjacent
        level = [-1] * len(adjacent)
        level[source] = 0
        queue = deque([source])
        while queue:
            node = queue.popleft()
            for edge in adjacent[node]:
                target = head[edge]
                if capacity[edge] > 0 and level[target] < 0:
                    level[target] = level[node] + 1
                    queue.append(target)
        return level

    def _push(self, node: int, sink: int, limit: int, level: list[int], cursor: list[int]) -> int:
        if node == sink:
            return limit
        head, capacity = self._head, self._capacity
        edges = self._adjacent[node]
        while cursor[node] < len(edges):
            edge = edges[cursor[node]]
            target = head[edge]
            if capacity[edge] > 0 and level[target] == level[node] + 1:
                pushed = self._push(target, sink, min(limit, capacity[edge]), level, cursor)
                if pushed:
                    capacity[edge] -= pushed
                    capacity[edge ^ 1] += pushed
                    return pushed
            cursor[node] += 1
        return 0
