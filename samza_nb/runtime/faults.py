"""Kills at named points of an epoch: the test-only switch the crash tests use.

Set in the environment of a job's process before it starts (Spark's Python workers inherit it):

- ``SAMZA_NB_KILL_AT=<point>[:<n>]``: SIGKILL the job's process the n-th time (default: the
  first) any process of the job reaches ``point``;
- ``SAMZA_NB_KILL_PID``: the process to kill (the job's driver; a Spark worker kills it
  rather than itself), with its process group when it leads one; default: the process
  reaching the point;
- ``SAMZA_NB_KILL_COUNTER``: a file counting the hits across processes (needed for n > 1).

Unset (always, outside the crash tests), a point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

__all__ = ["KILL_POINTS", "reached"]

#: Every named point, in the order an epoch reaches them.
KILL_POINTS = (
    "in-drain-epoch",  # a task has injected its drain control messages
    "after-output-append",  # a task appended its outputs, before its stores flush
    "mid-store-flush",  # a store appended its changelog, before its RocksDB write batch
    "mid-transaction",  # exactly-once: a task appended its checkpoint record, before the commit
    "after-transaction-commit",  # exactly-once: a task's transaction committed, stores not yet written
    "after-flush-before-commit",  # every task of the epoch returned, before the commit
    "mid-commit",  # checkpoints written, before the job records the epoch and applies retention
    "in-retention",  # a retention pass deleted one system's consumed intermediate data, not yet the next's
    "in-rebalance",  # processors expired for a new model, before the model is stored
)


def reached(point: str) -> None:
    """SIGKILL the job's process if the kill switch names ``point`` (and this is the n-th hit)."""
    wanted = os.environ.get("SAMZA_NB_KILL_AT")
    if not wanted:
        return
    name, _, nth = wanted.partition(":")
    if name != point:
        return
    if int(nth or 1) > 1:
        counter = os.environ.get("SAMZA_NB_KILL_COUNTER")
        if not counter:
            return
        with open(counter, "ab") as hits:  # O_APPEND: concurrent hits each add one byte
            hits.write(b".")
        if os.path.getsize(counter) < int(nth):
            return
    target = int(os.environ.get("SAMZA_NB_KILL_PID") or os.getpid())
    # A crash takes the job's whole process with it: its JVM and Spark's Python workers too
    # (they would otherwise write its stores on as orphans). A job started in a session of its
    # own (as the crash tests start it) is its process group.
    if os.getpgid(target) == target:
        os.killpg(target, signal.SIGKILL)
    os.kill(target, signal.SIGKILL)
