"""One run id per deployment, agreed among the processors (Samza's RunIdGenerator).

Under the ``runId`` lock, a processor looks at the cluster membership (ephemeral-sequential
nodes under ``clusterMembership/``). If it has no member, the deployment is new: it makes a run
id (``<epoch millis>-<uuid>``) and stores it in the metadata store, where drain notifications
look for it (namespace ``set-config``, key ``app.run.id``). Otherwise it reads the stored one.
Then it joins the membership with a node holding the run id it carries. The node stays until
:meth:`ZkRunIdGenerator.close` or the session ends, so every processor of a running deployment
keeps the run id, and the first one of the next does not.

The stored run id is current only while a member carries it (:func:`member_run_ids`): after a
crash or a stop the stored id stays, and a new deployment's processors register a moment before
the first of them stores the new one. A drain in that moment names neither run.
"""

from __future__ import annotations

import time
import uuid

from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.coordination.zk.lock import ZkDistributedLock
from samza_nb.errors import CoordinationError
from samza_nb.metadata import MetadataStore, NamespacedMetadataStore
from samza_nb.metadata.zk_client import ZkClient

__all__ = ["RUN_ID_KEY", "RUN_ID_NAMESPACE", "UNSAID", "ZkRunIdGenerator", "member_run_ids"]

#: Where the run id is stored (the same place ``samza_nb.drain.read_run_id`` reads).
RUN_ID_NAMESPACE = "set-config"
RUN_ID_KEY = "app.run.id"
_LOCK_ID = "runId"
#: A membership node's data: this tag and the run id its processor carries. Nodes of samza_nb
#: before run ids were recorded there hold the processor id, untagged.
_RUN_TAG = b"run:"
#: What :func:`member_run_ids` gives for a member that does not say its run id.
UNSAID = ""


class ZkRunIdGenerator:
    """``ZkRunIdGenerator(zk, keys, store, "p1").run_id()`` → the deployment's run id."""

    def __init__(
        self,
        zk: ZkClient,
        keys: ZkKeyBuilder,
        store: MetadataStore,
        processor_id: str,
        *,
        lock_timeout: float = 30.0,
    ) -> None:
        self.zk = zk
        self.keys = keys
        self.store = NamespacedMetadataStore(store, RUN_ID_NAMESPACE)
        self.processor_id = processor_id
        self.lock_timeout = lock_timeout
        self.membership = f"{keys.root}/clusterMembership"
        self._member: str | None = None
        self._run_id: str | None = None

    def run_id(self) -> str:
        """The run id of the deployment this processor belongs to (computed once)."""
        if self._run_id is not None:
            return self._run_id
        lock = ZkDistributedLock(
            self.zk, self.keys, _LOCK_ID, self.processor_id, timeout=self.lock_timeout
        )
        with lock:
            self.zk.ensure(self.membership)
            members = self.zk.children(self.membership) or []
            if not members:
                run_id = f"{int(time.time() * 1000)}-{uuid.uuid4()}"
                self.store.put(RUN_ID_KEY, run_id.encode())
                self.store.flush()
            else:
                raw = self.store.get(RUN_ID_KEY)
                if not raw:
                    msg = (
                        f"processors {sorted(members)} are members of {self.membership} but no "
                        f"run id is stored ({RUN_ID_NAMESPACE}/{RUN_ID_KEY})"
                    )
                    raise CoordinationError(msg)
                run_id = raw.decode()
            self._member = self.zk.create(
                self.membership + "/", _RUN_TAG + run_id.encode(), ephemeral=True, sequence=True
            )
        self._run_id = run_id
        return run_id

    def close(self) -> None:
        """Leave the membership (idempotent)."""
        if self._member is not None:
            self.zk.delete(self._member)
            self._member = None


def member_run_ids(zk: ZkClient, keys: ZkKeyBuilder) -> frozenset[str]:
    """The run ids the job's live processors carry (their membership nodes); :data:`UNSAID`
    for a member of an older samza_nb, whose node does not say (it carries the stored one)."""
    membership = f"{keys.root}/clusterMembership"
    carried = set()
    for child in zk.children(membership) or []:
        node = zk.get(f"{membership}/{child}")
        if node is None:
            continue  # it left meanwhile
        data = node[0] or b""
        carried.add(data[len(_RUN_TAG):].decode() if data.startswith(_RUN_TAG) else UNSAID)
    return frozenset(carried)
