"""Which host of a Spark cluster runs each task's epochs, so that its stores stay where they are.

On a master whose executors sit on other hosts, a task's stores live on the disk of the host
that ran its epoch (runtime/task/stores.py). An epoch run elsewhere finds no store, or an old copy,
and restores it from the changelog first. So a task keeps its host while that host has
executors; a task without one (new, or its host left the cluster) goes, in this order, to a
live host where it ran before (its store there is only behind: the changelog's tail restores
it), then to the host with the fewest tasks. When hosts join or come back, tasks move to them
only as far as evening out the load needs (a host with fewer than its floor share takes from
one with more than its ceiling share), those that ran there before first.

What this process ran is not all: a task that comes from another processor of the job (its
processor died, or the grouper moved it) ran on that processor's executors. The processors'
store reports (coordination/store_locality.py) say on which hosts its stores are, and
:meth:`HostPlacement.held` takes them in, so the task goes back to the host that holds its
newest copy instead of wherever the load is lowest.

A task with hot standbys never runs on a host where one of them keeps its copy while another
host is live (Samza's standby constraint: an active and its standby never share a host, so
one host's loss keeps one copy): a standby's processor keeps its copy on its own host, in the
folder the task's stores would use there. A promoted standby's host, which holds the newest
copy, is where the task goes next.

Not thread-safe: the executor calls it under its lock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["REMEMBERED_PLACEMENTS", "HostPlacement"]

#: Placements a task not in an epoch (nothing to do) still counts on its host's load for.
REMEMBERED_PLACEMENTS = 100


class HostPlacement:
    """Task (a store folder's key) -> the executor host that runs its epochs."""

    def __init__(self) -> None:
        self._host: dict[str, str] = {}
        #: Task -> hosts it ran on, the latest last (its stores are there, maybe behind).
        self._history: dict[str, list[str]] = {}
        #: Task -> when it came to its host (a count of arrivals): the newest leave first.
        self._arrived: dict[str, int] = {}
        self._arrivals = 0
        #: Task -> the last placement it was part of: an epoch may leave out tasks with nothing
        #: to do, and those still count on their hosts for :data:`REMEMBERED_PLACEMENTS`.
        self._seen: dict[str, int] = {}
        self._placements = 0
        #: Task -> the hosts of its standbys, where it does not run while another host is live.
        self._avoid: dict[str, frozenset[str]] = {}

    def hosts_of(self, tasks: Iterable[str]) -> dict[str, str]:
        return {task: self._host[task] for task in tasks if task in self._host}

    def place(self, epoch_tasks: Sequence[str], hosts: Sequence[str]) -> dict[str, str]:
        """The host of each of ``epoch_tasks`` among the live ``hosts`` (kept, then chosen),
        the load counted over every task placed in the last placements."""
        if not hosts:
            return {}
        self._placements += 1
        for task in epoch_tasks:
            self._seen[task] = self._placements
        recent = self._placements - REMEMBERED_PLACEMENTS
        tasks = [task for task, seen in self._seen.items() if seen > recent]
        live = sorted(set(hosts))
        load: Counter[str] = Counter({host: 0 for host in live})
        placed: dict[str, str] = {}
        for task in tasks:
            kept = self._host.get(task)
            if kept is not None and kept in self._allowed(task, live):
                placed[task] = kept
                load[kept] += 1
        ceiling = -(-len(tasks) // len(live))
        for task in tasks:
            if task in placed:
                continue
            allowed = self._allowed(task, live)
            before = [h for h in reversed(self._history.get(task, [])) if h in allowed and load[h] < ceiling]
            host = before[0] if before else min(allowed, key=lambda h: (load[h], h))
            placed[task] = host
            load[host] += 1
        self._even_out(placed, load, len(tasks))
        for task, host in placed.items():
            self.ran(task, host)
        return {task: placed[task] for task in epoch_tasks}

    def _even_out(self, placed: dict[str, str], load: Counter[str], tasks: int) -> None:
        floor, ceiling = tasks // len(load), -(-tasks // len(load))
        while True:
            short = min(load, key=lambda h: (load[h], h))
            if load[short] >= floor and max(load.values()) <= ceiling:
                return
            donors = {host for host in load if load[host] - load[short] >= 2}
            if not donors:
                return
            # Tasks that ran on ``short`` before first (their stores there are only behind),
            # then those that came to their host last (Spark ran a task elsewhere when its
            # host was busy or gone: that task leaves, not one settled there), busiest first.
            movable = [task for task, host in placed.items() if host in donors and short in self._allowed(task, load)]
            if not movable:
                return
            task = min(
                movable,
                key=lambda t: (
                    short not in self._history.get(t, []),
                    -self._arrived.get(t, 0),
                    -load[placed[t]],
                    t,
                ),
            )
            load[placed[task]] -= 1
            placed[task] = short
            load[short] += 1

    def _allowed(self, task: str, live: Iterable[str]) -> list[str]:
        """The live hosts ``task`` may run on: those without its standbys, if any."""
        hosts = sorted(live)
        avoid = self._avoid.get(task, frozenset())
        return [host for host in hosts if host not in avoid] or hosts

    def held(
        self,
        stores: Mapping[str, Mapping[str, int]],
        copies: Mapping[str, Mapping[str, int]] | None = None,
        standbys: Mapping[str, Iterable[str]] | None = None,
        arrived: Iterable[str] | None = None,
        mine: Iterable[str] | None = None,
    ) -> None:
        """Take in where the job's processors reported holding each task's stores and its
        standbys' copies (host -> {task -> the checkpoint epoch it took them up there}), and
        the hosts of the tasks' standbys now (task -> hosts). An epoch is when a stint began,
        so the active copy of the latest stint is the newest; a standby's copy is behind it
        by the steps it has yet to take, and counts as older than any active copy. A task
        ``arrived`` from another processor (all when None) goes to the host of its newest copy
        that is no live standby's, when that is not where this process last ran it; the
        others stay where this process runs them (its copy there is the newest, whatever other
        copies say). Tasks no longer ``mine`` (this processor's active tasks now) stop counting
        on their hosts' load."""
        if mine is not None:
            runs = set(mine)
            self._seen = {task: seen for task, seen in self._seen.items() if task in runs}
        self._avoid = {task: frozenset(hosts) for task, hosts in (standbys or {}).items()}
        moved = None if arrived is None else set(arrived)
        reported: dict[str, dict[str, tuple[bool, int]]] = {}
        for active, held in ((False, copies or {}), (True, stores)):
            for host, tasks in held.items():
                for task, epoch in tasks.items():
                    reported.setdefault(task, {})[host] = (active, epoch)
        for task, found in reported.items():
            hosts = sorted(found, key=lambda host: (found[host], host))
            ours = [host for host in self._history.get(task, []) if host not in hosts]
            self._history[task] = ours + hosts
            avoid = self._avoid.get(task, frozenset())
            newest = next((host for host in reversed(hosts) if host not in avoid), None)
            kept = self._host.get(task)
            if kept is not None and newest is not None and kept != newest and (moved is None or task in moved):
                # Another processor ran it on another host since (or a standby there was
                # promoted): its store here is behind.
                del self._host[task]

    def tasks_by_host(self) -> dict[str, str]:
        """Every task placed so far -> its host."""
        return dict(self._host)

    def ran(self, task: str, host: str) -> None:
        """``task``'s epoch ran on ``host`` (where Spark put it: its stores are there now)."""
        if self._host.get(task) != host:
            self._arrivals += 1
            self._arrived[task] = self._arrivals
        self._host[task] = host
        history = self._history.setdefault(task, [])
        if host in history:
            history.remove(host)
        history.append(host)

    def noted(self, ran_on: Mapping[str, str], hosts: Iterable[str]) -> None:
        """Where an epoch's tasks ran, for those that ran on one of the live ``hosts``."""
        live = set(hosts)
        for task, host in ran_on.items():
            if host in live:
                self.ran(task, host)
