"""Standalone coordination through Azure Storage (SAMZA.md §10): one module per idea.

``names`` (container, page blob, table), ``blob`` (the page blob: lease, job model bundle,
barrier, processor list), ``processors`` (the heartbeat table), ``lock`` (:class:`AzureLock`),
``lease`` (:class:`AzureJobLease`), ``fencing`` (a processor's fencing lease and token), ``run_id``, ``timings`` (:class:`AzureTimings`),
``leadership`` (the leader's side of the protocol), ``agreement`` (a processor's side of a
round), ``coordinator`` (:class:`AzureJobCoordinator`, made of those two)
and ``observer`` (:class:`AzureJobObserver`, reads a job without joining it).
Importing ``factory`` registers ``azure`` as a ``job.coordinator.factory``.
"""

from samza_nb.coordination.azure.blob import (
    BARRIER_END,
    BARRIER_START,
    BARRIER_TIMEOUT,
    CoordinationBlob,
    JobModelBundle,
    LeaseLost,
)
from samza_nb.coordination.azure.coordinator import AzureJobCoordinator, AzureTimings
from samza_nb.coordination.azure.factory import azure_job_coordinator
from samza_nb.coordination.azure.lease import AzureJobLease
from samza_nb.coordination.azure.lock import AzureLock
from samza_nb.coordination.azure.names import AzureNames
from samza_nb.coordination.azure.observer import AzureJobObserver, AzureObservation
from samza_nb.coordination.azure.processors import UNASSIGNED, ProcessorRow, ProcessorTable
from samza_nb.coordination.azure.run_id import AzureRunIdGenerator

__all__ = [
    "BARRIER_END",
    "BARRIER_START",
    "BARRIER_TIMEOUT",
    "UNASSIGNED",
    "AzureJobCoordinator",
    "AzureJobLease",
    "AzureLock",
    "AzureJobObserver",
    "AzureNames",
    "AzureObservation",
    "AzureRunIdGenerator",
    "AzureTimings",
    "CoordinationBlob",
    "JobModelBundle",
    "LeaseLost",
    "ProcessorRow",
    "ProcessorTable",
    "azure_job_coordinator",
]
