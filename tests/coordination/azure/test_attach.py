"""``%samza attach azure://ACCOUNT``: a handle and the live widget that read an Azure job's
table and page blob without joining it, and drain it; coordinators run in threads against
Azurite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from samza_nb.config import Config
from samza_nb.coordination.azure import AzureJobObserver
from samza_nb.drain import read_drain_notifications
from samza_nb.errors import ConfigError, CoordinationError
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.notebook.magics import SamzaMagics, Session
from samza_nb.notebook.magics.attach_handle import AttachedJob
from samza_nb.notebook.magics.attach_schemes import attach, attach_scheme_names
from samza_nb.notebook.widgets.attached_job import AttachedJobWidget

from .conftest import wait_until

pytestmark = pytest.mark.services

ALL_TASKS = {f"Partition {p}" for p in range(6)}


def _agreed(handle: AttachedJob, processors: set[str]) -> bool:
    seen = handle.observe()
    return (
        seen.barrier == "DONE"
        and seen.active == seen.latest
        and {pid for pid, _ in seen.assignment.values()} == processors
    )


def test_attach_sees_the_job_without_joining_and_drains_it(
    coordinators: Callable[..., Any],
    job_config: Config,
    metadata: AzureBlobMetadataStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "azure" in attach_scheme_names()
    first, _ = coordinators("p1", "host-a")
    second, _ = coordinators("p2", "host-b")
    run_id = first.run_id_generator(metadata).run_id()
    connect = job_config.get_str("azure.storage.connect")
    # The key comes from the environment, never from the notebook text.
    monkeypatch.setenv("SAMZA_NB_AZURE_CONNECTION_STRING", connect)
    settings = {k: v for k, v in job_config.to_dict().items() if k != "azure.storage.connect"}
    app_name = settings.pop("app.name")
    handle = attach("azure://devstoreaccount1", app_name, config=settings)
    try:
        wait_until(lambda: _agreed(handle, {"p1", "p2"}), 30, "a model over p1 and p2")
        seen = handle.observe()
        leader = next(c for c in (first, second) if c.is_leader).processor_id
        assert seen.leader == leader
        assert {(p.processor_id, p.location_id) for p in seen.processors} == {
            ("p1", "host-a"),
            ("p2", "host-b"),
        }
        assert set(seen.assignment) == ALL_TASKS
        latest = seen.latest_version
        assert latest is not None and set(latest.expected) == {"p1", "p2"}
        assert handle.status().state == "running"
        widget = AttachedJobWidget(handle, auto_refresh=False)
        try:
            assert {row[0] for row in widget.task_rows()} == ALL_TASKS
            text = widget.snapshot_text()
            assert f"leader {leader}" in text
            for shown in (text, widget.snapshot_html(), repr(handle), repr(seen)):
                assert connect not in shown and "AccountKey" not in shown
        finally:
            widget.close()
        handle.drain()
        assert [n.run_id for n in read_drain_notifications(metadata)] == [run_id]
    finally:
        handle.close()


def test_attach_refuses_another_account(
    job_config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "SAMZA_NB_AZURE_CONNECTION_STRING", job_config.get_str("azure.storage.connect")
    )
    with pytest.raises(ConfigError, match="not 'otheraccount'"):
        attach("azure://otheraccount", "pages")


def test_magic_attach_azure_returns_the_handle(
    coordinators: Callable[..., Any], job_config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    coordinators("p1", "host-a")
    monkeypatch.setenv(
        "SAMZA_NB_AZURE_CONNECTION_STRING", job_config.get_str("azure.storage.connect")
    )
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "samza_nb")
    magics = shell.magics_manager.registry["SamzaMagics"]
    assert isinstance(magics, SamzaMagics)
    magics.session = Session(shell)
    app_name = job_config.get_str("app.name")
    handle = shell.run_line_magic(
        "samza",
        f"attach azure://devstoreaccount1?job=1 {app_name} "
        "--config job.coordinator.azure.liveness.timeout.ms=3000",
    )
    try:
        assert isinstance(handle, AttachedJob)
        wait_until(lambda: _agreed(handle, {"p1"}), 30, "a model over p1")
        assert handle.status().leader == "p1"
    finally:
        handle.close()
    assert handle.status().state == "detached"


def test_an_account_that_does_not_answer_is_a_coordination_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Notebook 07 observes before it starts processes: a dead endpoint must fail there, in one
    # line naming the blob and the endpoint, not as an azure-core traceback.
    key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
    dead = "http://127.0.0.1:9/devstoreaccount1"
    monkeypatch.setenv(
        "SAMZA_NB_AZURE_CONNECTION_STRING",
        f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={key};"
        f"BlobEndpoint={dead};TableEndpoint={dead}",
    )
    config = {
        "app.name": "unreachable",
        "azure.storage.retry.attempts": "1",
        "azure.storage.retry.interval.ms": "100",
    }
    observer = AzureJobObserver(Config(config))
    with pytest.raises(CoordinationError, match=r"check that the page blob exists: .*127\.0\.0\.1.*9") as caught:
        observer.observe()
    assert key not in str(caught.value)
    observer.close()
    # %samza attach fails the same way, at once: no handle whose widget shows a traceback.
    with pytest.raises(CoordinationError, match="check that the page blob exists") as caught:
        attach("azure://devstoreaccount1", "unreachable", config={k: v for k, v in config.items() if k != "app.name"})
    assert key not in str(caught.value)


def test_the_cli_sees_the_live_processors_of_a_running_job(
    coordinators: Callable[..., Any], job_config: Config
) -> None:
    # What `samza-nb drain --wait` waits on and `samza-nb reset` refuses a running job by.
    from samza_nb.coordination.liveness import live_processors

    coordinators("p1", "host-a")
    coordinators("p2", "host-b")
    config = Config({**job_config.to_dict(), "job.coordinator.factory": "azure"})
    live = live_processors(config)
    assert live is not None
    wait_until(lambda: (live_processors(config) or live).ids == ["p1", "p2"], 30, "p1 and p2 live")
    connect = job_config.get_str("azure.storage.connect") or ""
    assert connect not in live.where and "AccountKey" not in live.where


@pytest.mark.parametrize(
    "connect",
    [
        "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=c2VjcmV0a2V5;BlobEndpoint=not a url;TableEndpoint=::::",
        "DefaultEndpointsProtocol=http; AccountName=acct; AccountKey = c2VjcmV0a2V5 ;BlobEndpoint=http://127.0.0.1:1/acct",
    ],
)
def test_a_connection_string_the_sdk_cannot_read_is_a_config_error(connect: str) -> None:
    with pytest.raises(ConfigError, match="the Azure connection string from azure.storage.connect does not parse") as raised:
        AzureJobObserver({"app.name": "unread", "azure.storage.connect": connect})
    assert "c2VjcmV0a2V5" not in str(raised.value)
