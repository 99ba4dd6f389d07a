"""A notebook finds the services where ``make services-up`` put them, and never starts one
silently (samza_nb/notebook/services.py, samza_nb/notebook/status_line.py).

The kernel runs in a project's ``notebooks/`` folder with no services variable set, as a
person's JupyterLab does; the service it starts is a real Kafka-protocol broker (Tansu)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from samza_nb import services
from samza_nb.errors import ServiceError
from samza_nb.notebook.services import ServiceAddresses, use_services
from samza_nb.notebook.status_line import StatusLine

_VARIABLES = (
    "SAMZA_NB_SERVICES_DIR",
    "SAMZA_NB_SERVICES_ENV",
    "SAMZA_NB_ZK_CONNECT",
    "SAMZA_NB_KAFKA_BOOTSTRAP",
    "SAMZA_NB_AZURE_CONNECTION_STRING",
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project root with a Makefile and notebooks/; its services are stopped afterwards."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (root / "Makefile").write_text(
        "services-up:\n\tsamza-nb services up\nservices-down:\n\tsamza-nb services down\n",
        encoding="utf-8",
    )
    yield root
    services.down(services_dir=root / ".services")


def _clean_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in _VARIABLES}


def _cell_in_kernel(cwd: Path, code: str) -> list[dict[str, Any]]:
    """Run ``code`` in a fresh kernel started in ``cwd``; the iopub messages of the cell."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(cwd), env=_clean_env())
    client = manager.client()
    messages: list[dict[str, Any]] = []
    try:
        client.start_channels()
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(code, timeout=120, output_hook=messages.append)
        assert reply["content"]["status"] == "ok", messages
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return messages


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return str(content.get("text") or content.get("data", {}).get("text/plain", ""))


def test_a_notebook_starts_a_missing_service_in_the_project_root_and_says_so(project: Path) -> None:
    messages = _cell_in_kernel(
        project / "notebooks",
        "from samza_nb.notebook.services import use_services\n"
        "bootstrap = use_services('kafka')['SAMZA_NB_KAFKA_BOOTSTRAP']\n"
        "print('bootstrap', bootstrap)\n",
    )
    shown = [(m["msg_type"], _text(m)) for m in messages if _text(m)]
    # The first thing the cell shows, at once: what starts and where (the project root's
    # .services, not the notebook folder's).
    kind, first = shown[0]
    assert kind == "display_data"
    assert first.startswith(f"starting kafka in {project / '.services'} ")
    assert "project root" in first
    # It ends on where it runs and what stops it, in place of the status line.
    final = [text for kind, text in shown if kind == "update_display_data"][-1]
    assert final.startswith("kafka: started at 127.0.0.1:")
    assert f"`make services-down` in {project} stops it" in final
    assert not (project / "notebooks" / ".services").exists()
    # The CLI run from the project root sees it and stops it, as `make services-down` does.
    address = services.read_service_env(project / ".services" / "services.env")
    assert f"bootstrap {address['SAMZA_NB_KAFKA_BOOTSTRAP']}" in "".join(t for _, t in shown)
    status = subprocess.run(
        [sys.executable, "-m", "samza_nb.cli", "services", "down"],
        cwd=project,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "kafka" in status.stdout and "stopped" in status.stdout
    assert services.status(["kafka"], services_dir=project / ".services")[0].state == "stopped"


def test_a_running_service_is_reported_not_started(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (info,) = services.up(["kafka"], services_dir=project / ".services")
    monkeypatch.chdir(project / "notebooks")
    addresses = use_services("kafka", start=False)
    assert addresses["SAMZA_NB_KAFKA_BOOTSTRAP"] == info.env["SAMZA_NB_KAFKA_BOOTSTRAP"]
    assert capsys.readouterr().out.strip() == (
        f"kafka: running at {info.address} ({project / '.services'})"
    )


def test_a_service_set_in_the_environment_is_the_users_own(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project / "notebooks")
    monkeypatch.setenv("SAMZA_NB_ZK_CONNECT", "zk.example:2181")
    addresses = use_services("zookeeper", start=False)
    assert addresses["SAMZA_NB_ZK_CONNECT"] == "zk.example:2181"
    assert "your own at zk.example:2181" in capsys.readouterr().out
    assert not (project / ".services").exists()


def test_without_starting_a_missing_service_is_one_line_naming_make_services_up(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "notebooks")
    with pytest.raises(ServiceError) as raised:
        use_services("kafka", start=False)
    assert "\n" not in str(raised.value)
    assert f"`make services-up` in {project}" in str(raised.value)
    with pytest.raises(ServiceError, match="unknown service 'kafak'; known services: zookeeper"):
        use_services("kafak")
    # An address the services do not have is a ServiceError naming it, not a KeyError.
    with pytest.raises(ServiceError, match="no SAMZA_NB_ZK_CONNECT among"):
        ServiceAddresses({"SAMZA_NB_KAFKA_BOOTSTRAP": "h:1"})["SAMZA_NB_ZK_CONNECT"]


def test_the_addresses_never_show_an_account_key() -> None:
    key = "c2VjcmV0LWtleS1vZi10aGUtdGVzdC1hY2NvdW50LTEyMzQ1Njc4OTA="
    addresses = ServiceAddresses(
        {"SAMZA_NB_AZURE_CONNECTION_STRING": f"AccountName=dev;AccountKey={key}"}
    )
    assert key not in repr(addresses) and key not in str(addresses)
    assert addresses["SAMZA_NB_AZURE_CONNECTION_STRING"].endswith(key)


def test_a_status_line_outside_a_kernel_prints_its_first_and_last_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with StatusLine("waiting for the leader"):
        pass
    first, last = capsys.readouterr().out.splitlines()
    assert first == "waiting for the leader…"
    assert last.startswith("waiting for the leader: done in ")
    with pytest.raises(RuntimeError), StatusLine("draining"):
        message = "boom"
        raise RuntimeError(message)
    assert capsys.readouterr().out.splitlines()[-1].startswith("draining: failed after ")
