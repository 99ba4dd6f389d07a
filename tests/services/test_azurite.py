"""Azurite: blob leases (the Azure coordinator's leader election) and the table endpoint."""

from __future__ import annotations

import socket
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.services


def test_second_lease_is_refused(azure_connection_string: str, azure_container: str) -> None:
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobServiceClient

    with BlobServiceClient.from_connection_string(azure_connection_string) as client:
        blob = client.get_blob_client(azure_container, "leader-lease")
        blob.upload_blob(b"", overwrite=True)
        lease = blob.acquire_lease(lease_duration=15)
        assert lease.id

        with pytest.raises(ResourceExistsError) as refused:
            blob.acquire_lease(lease_duration=15)
        assert refused.value.status_code == 409
        assert refused.value.error_code == "LeaseAlreadyPresent"

        lease.release()
        blob.acquire_lease(lease_duration=15).release()


def test_table_endpoint_answers(service_env: dict[str, str]) -> None:
    endpoint = urlparse(service_env["SAMZA_NB_AZURE_TABLE_ENDPOINT"])
    assert endpoint.hostname and endpoint.port
    with socket.create_connection((endpoint.hostname, endpoint.port), timeout=5):
        pass
