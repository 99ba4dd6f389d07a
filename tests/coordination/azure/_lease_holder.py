"""Takes an Azure job lease and holds it until killed: ``python _lease_holder.py CONTAINER``
(the connection string comes from $SAMZA_NB_AZURE_CONNECTION_STRING)."""

from __future__ import annotations

import sys
import time

from samza_nb.coordination.azure import AzureJobLease
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import AzureAccount

if __name__ == "__main__":
    store = AzureBlobMetadataStore(AzureAccount.from_config({}), sys.argv[1])
    lease = AzureJobLease(store, duration=15)
    print(f"HELD {lease.acquire()}", flush=True)
    time.sleep(600)
