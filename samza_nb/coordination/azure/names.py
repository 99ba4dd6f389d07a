"""Where the Azure coordinator keeps what (SAMZA.md §10.1, Samza's AzureConfig).

id = the global app id with every non-alphanumeric character removed; container
``samzacontainer<id>``, page blob ``samzablob<id>``, table ``samzatable<id>``. Names too long
for Azure are truncated with a short hash of the whole (see
:mod:`samza_nb.metadata.azure_storage`). Beside the page blob the container holds a block blob
per processor (``processors/<id>``, the processor's fencing lease) and per lock
(``locks/<lock id>``).

The job lease is not named here: :class:`~samza_nb.coordination.azure.lease.AzureJobLease` leases
the blob of the metadata-store key ``GENERATION_KEY``, ``n/job-lease/generation``, in the
container of the metadata store it is given (``samza-nb-<globalAppId>`` for
``AzureBlobMetadataStore.for_job``); the blob holds the generation and, in its metadata, the
holder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from samza_nb.config import Config, global_app_id
from samza_nb.metadata.azure_storage import container_name, table_name

__all__ = ["AzureNames"]


@dataclass(frozen=True)
class AzureNames:
    """The resource names of one job.

    >>> AzureNames.for_job(Config({"app.name": "page-views", "job.id": "7"}))
    AzureNames(container='samzacontainerapppageviews7', blob='samzablobapppageviews7', table='samzatableapppageviews7')
    """

    container: str
    blob: str
    table: str

    @classmethod
    def for_job(cls, config: Config) -> AzureNames:
        ident = re.sub(r"[^A-Za-z0-9]", "", global_app_id(config))
        return cls(
            container_name("samzacontainer", ident.lower()),
            "samzablob" + ident,
            table_name("samzatable", ident),
        )

    @staticmethod
    def processor_blob(processor_id: str) -> str:
        return f"processors/{_safe(processor_id)}"

    @staticmethod
    def lock_blob(lock_id: str) -> str:
        return f"locks/{_safe(lock_id)}"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else f"~{ord(c):02X}" for c in text)
