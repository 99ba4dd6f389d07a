"""One run id per deployment, agreed among the processors of an Azure job.

Under the ``runId`` :class:`AzureLock`, a processor looks for live processors (fresh rows in the
processor table) that already carry a run id. If there are none, the deployment is new: it makes
a run id (``<epoch millis>-<uuid>``) and stores it in the metadata store, where drain
notifications look for it (namespace ``set-config``, key ``app.run.id``). Otherwise it adopts
theirs. Either way it then writes the run id into its own row (heartbeats keep it there) before
releasing the lock, so the next processor of the same deployment finds it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from samza_nb.coordination.azure.lock import AzureLock
from samza_nb.coordination.azure.processors import ProcessorTable
from samza_nb.metadata import MetadataStore, NamespacedMetadataStore

__all__ = ["RUN_ID_KEY", "RUN_ID_NAMESPACE", "AzureRunIdGenerator"]

RUN_ID_NAMESPACE = "set-config"
RUN_ID_KEY = "app.run.id"
_LOCK_ID = "runId"


class AzureRunIdGenerator:
    """``generator.run_id()`` → the deployment's run id (computed once).

    ``adopt(run_id)`` records the run id in this processor's row (the coordinator's heartbeat
    keeps it there).
    """

    def __init__(
        self,
        container: Any,
        table: ProcessorTable,
        store: MetadataStore,
        processor_id: str,
        *,
        freshness: float,
        adopt: Callable[[str], None],
        lock_timeout: float = 60.0,
        lease_duration: float = 60.0,
    ) -> None:
        self.container = container
        self.table = table
        self.store = NamespacedMetadataStore(store, RUN_ID_NAMESPACE)
        self.processor_id = processor_id
        self.freshness = freshness
        self._adopt = adopt
        self.lock_timeout = lock_timeout
        self.lease_duration = lease_duration
        self._run_id: str | None = None

    def run_id(self) -> str:
        if self._run_id is not None:
            return self._run_id
        lock = AzureLock(
            self.container, _LOCK_ID, timeout=self.lock_timeout, lease_duration=self.lease_duration
        )
        with lock:
            running = {
                row.run_id
                for row in self.table.live(self.freshness)
                if row.processor_id != self.processor_id and row.run_id
            }
            stored = self.store.get(RUN_ID_KEY)
            if running and stored is not None and stored.decode() in running:
                run_id = stored.decode()
            elif running:
                run_id = sorted(running)[-1]
            else:
                run_id = f"{int(time.time() * 1000)}-{uuid.uuid4()}"
                self.store.put(RUN_ID_KEY, run_id.encode())
                self.store.flush()
            self._adopt(run_id)
        self._run_id = run_id
        return run_id
