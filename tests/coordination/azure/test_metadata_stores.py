"""The Azure coordinator with each registered metadata store: its own (``azure``) works (the
fenced commits of tests/coordination/azure/test_coordinator.py, the processes of
tests/runtime/test_azure_processes.py); every other one is refused when the job is planned, in
one line naming both keys and the store to use. The stores come from the registry, so a store
registered later is checked too."""

from __future__ import annotations

import pytest

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.job.compatibility import check_compatibility
from samza_nb.metadata.registry import metadata_store_names


@pytest.mark.parametrize("store", metadata_store_names())
def test_the_azure_coordinator_works_with_its_own_store_and_refuses_the_others_in_one_line(store: str) -> None:
    config = Config({"job.coordinator.factory": "azure", "metadata.store.factory": store})
    if store == "azure":
        check_compatibility(config)
        return
    with pytest.raises(ConfigError) as refused:
        check_compatibility(config)
    message = str(refused.value)
    assert "\n" not in message
    assert f"job.coordinator.factory=azure with metadata.store.factory={store}" in message
    assert "set metadata.store.factory=azure" in message
