"""ZkJobLease: the job lease as an ephemeral node, its generation in a persistent one.

``acquire`` creates the ephemeral ``jobLease`` node (data: who holds it) and bumps
``jobLeaseGeneration`` in one transaction (the bump is a compare-and-set on the node's version),
so the generation is taken only together with the lease. The lease ends with the session that
created it: a process frozen past its session timeout loses it, and :meth:`check` then fails
because the node is gone or belongs to another session. :meth:`fence` adds the same conditions
to a transaction, so a commit written with it cannot land after the lease was lost.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError

from samza_nb.coordination.lease import JobLease
from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.errors import JobLeaseError, SamzaNbError
from samza_nb.metadata.zk_client import ZkClient

__all__ = ["ZkJobLease"]

#: Seconds a waiter for the job lease trusts its watch before it looks again.
_LEASE_RECHECK_S = 5.0


class ZkJobLease(JobLease):
    """The lease of the job whose coordination tree ``keys`` names, held by session ``zk``.

    ``holder`` describes this incarnation (default: ``pid <n> on <host>``).
    """

    def __init__(self, zk: ZkClient, keys: ZkKeyBuilder, holder: str | None = None) -> None:
        self.zk = zk
        self.keys = keys
        self.holder_name = holder or f"pid {os.getpid()} on {socket.gethostname()}"
        self._generation = 0
        self._node_version = -1

    def __repr__(self) -> str:
        return f"ZkJobLease({self.keys.lease!r}, generation={self._generation})"

    @property
    def generation(self) -> int:
        return self._generation

    def _read_generation(self) -> tuple[int, int]:
        self.zk.ensure(self.keys.lease_generation, b"0")
        found = self.zk.get(self.keys.lease_generation)
        if found is None:
            return 0, -1
        text = found[0].decode() or "0"
        return int(text), found[1].version

    def holder(self) -> str | None:
        found = self.zk.get(self.keys.lease)
        if found is None:
            return None
        try:
            return str(json.loads(found[0])["holder"])
        except (ValueError, KeyError, TypeError):
            return found[0].decode("utf-8", "replace") or "unknown"

    def acquire(self, *, wait: bool = False, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            generation, version = self._read_generation()
            record = json.dumps({"holder": self.holder_name, "generation": generation + 1})

            def build(tx: Any, g: int = generation, v: int = version, r: str = record) -> None:
                tx.create(self.keys.lease, r.encode(), ephemeral=True)
                tx.set_data(self.keys.lease_generation, str(g + 1).encode(), version=v)

            try:
                self.zk.commit(f"acquire the job lease {self.keys.lease}", build)
            except BadVersionError:
                continue  # another incarnation bumped the generation meanwhile; read it again
            except NodeExistsError as error:
                holder = self.holder()
                if not wait:
                    msg = (
                        f"the job lease {self.keys.lease} on {self.zk.description} is held by "
                        f"{holder or 'another incarnation'}"
                    )
                    raise JobLeaseError(msg, holder=holder) from error
                self._wait_free(deadline, holder)
                continue
            except SamzaNbError as error:
                msg = f"the job lease {self.keys.lease} could not be taken: {error}"
                raise JobLeaseError(msg) from error
            self._generation = generation + 1
            stat = self.zk.exists(self.keys.lease_generation)
            self._node_version = stat.version if stat is not None else -1
            return self._generation

    def _wait_free(self, deadline: float | None, holder: str | None) -> None:
        freed = threading.Event()

        def watch(event: Any) -> None:
            freed.set()

        if self.zk.exists(self.keys.lease, watch=watch) is None:
            return
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            msg = f"the job lease {self.keys.lease} is still held by {holder or 'another incarnation'}"
            raise JobLeaseError(msg, holder=holder)
        # A watch goes with its connection (kazoo does not set it again after a reconnect), so
        # the wait is bounded and the caller looks again.
        freed.wait(_LEASE_RECHECK_S if remaining is None else min(remaining, _LEASE_RECHECK_S))

    def release(self) -> None:
        if self._generation == 0:
            return
        found = self.zk.get(self.keys.lease)
        session = self.zk.session_id
        if found is not None and session is not None and found[1].ephemeralOwner == session:
            self.zk.delete(self.keys.lease)

    def check(self) -> None:
        if self._generation == 0:
            msg = f"the job lease {self.keys.lease} was never acquired by this incarnation"
            raise JobLeaseError(msg)
        try:
            found = self.zk.get(self.keys.lease)
            generation = self._read_generation()[0]
        except SamzaNbError as error:
            msg = f"the job lease {self.keys.lease} cannot be checked (session lost?): {error}"
            raise JobLeaseError(msg) from error
        session = self.zk.session_id
        if found is None or session is None or found[1].ephemeralOwner != session:
            holder = self.holder() if found is not None else None
            msg = (
                f"this incarnation (generation {self._generation}) lost the job lease "
                f"{self.keys.lease}: its ZooKeeper session ended"
                + (f"; now held by {holder}" if holder else "")
            )
            raise JobLeaseError(msg, holder=holder)
        if generation != self._generation:
            msg = (
                f"this incarnation (generation {self._generation}) is fenced: the job lease "
                f"generation is now {generation}"
            )
            raise JobLeaseError(msg)

    def fence(self, tx: Any) -> None:
        """Add to a kazoo transaction the checks that this incarnation still holds the lease.

        The lease node must exist (it ends with the session that made it) and the generation
        node must be at the version this incarnation set, so the transaction fails once the
        lease was lost or taken over.
        """
        if self._generation == 0 or self._node_version < 0:
            msg = f"the job lease {self.keys.lease} was never acquired by this incarnation"
            raise JobLeaseError(msg)
        tx.check(self.keys.lease, 0)
        tx.check(self.keys.lease_generation, self._node_version)
