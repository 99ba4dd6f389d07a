"""Service lifecycle on a private services folder: idempotent up, clean down, loud failures.

The cheap Kafka broker (Tansu, milliseconds to start) stands in for every service; the folder is
the test's own, so the suite's running services and env file are not touched.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from samza_nb import cli, services
from samza_nb.errors import ServiceError
from samza_nb.services._process import ProcessRecord, group_members, is_alive

pytestmark = pytest.mark.services


@pytest.fixture(autouse=True)
def _no_external_services(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "SAMZA_NB_ZK_CONNECT",
        "SAMZA_NB_KAFKA_BOOTSTRAP",
        "SAMZA_NB_AZURE_CONNECTION_STRING",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("SAMZA_NB_KAFKA_BROKER_BIN", raising=False)


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-broker.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def _records(info: services.ServiceInfo, home: Path) -> list[ProcessRecord]:
    state = services.SERVICES[info.name](services.ServicesHome.resolve(home))._read_state()
    assert state is not None
    return [ProcessRecord.from_json(item) for item in state["processes"]]


def test_up_twice_is_one_service_and_down_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (first,) = services.up(["kafka"], services_dir=tmp_path)
    records = _records(first, tmp_path)
    (second,) = services.up(["kafka"], services_dir=tmp_path)
    assert first.state == "started" and second.state == "running"
    assert first.pids == second.pids and len(first.pids) == 1
    assert all(is_alive(record) for record in records)

    env = services.read_service_env(tmp_path / "services.env")
    assert env["SAMZA_NB_KAFKA_BOOTSTRAP"] == first.address
    assert [info.state for info in services.status(["kafka"], services_dir=tmp_path)] == ["running"]
    # A shell that sourced the env file (as docs/services.md says) still sees and stops its own
    # broker: the address it wrote is not a "real service instead".
    monkeypatch.setenv("SAMZA_NB_KAFKA_BOOTSTRAP", first.address)
    assert [info.state for info in services.status(["kafka"], services_dir=tmp_path)] == ["running"]

    stopped = {info.name: info.state for info in services.down(services_dir=tmp_path)}
    assert stopped["kafka"] == "stopped" and stopped["zookeeper"] == "not running"
    assert not any(is_alive(record) for record in records)
    assert all(group_members(record.pgid) == [] for record in records)
    assert not (tmp_path / "services.env").exists()
    monkeypatch.delenv("SAMZA_NB_KAFKA_BOOTSTRAP")  # the env file it came from is gone
    assert services.status(["kafka"], services_dir=tmp_path)[0].state == "stopped"


def test_a_service_that_exits_names_itself_and_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMZA_NB_KAFKA_BROKER_BIN", str(_script(tmp_path, "echo boom; exit 3")))
    with pytest.raises(ServiceError) as failed:
        services.up(["kafka"], services_dir=tmp_path / "svc")
    error = failed.value
    assert error.service == "kafka"
    assert error.log_file == str(tmp_path / "svc" / "kafka" / "kafka.log")
    assert "kafka exited with code 3" in str(error) and error.log_file in str(error)
    assert "boom" in str(error)
    assert services.status(["kafka"], services_dir=tmp_path / "svc")[0].state == "stopped"


def test_a_service_that_never_answers_times_out_and_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pid"
    script = _script(tmp_path, f"echo $$ > {pid_file}; exec sleep 60")
    monkeypatch.setenv("SAMZA_NB_KAFKA_BROKER_BIN", str(script))
    with pytest.raises(ServiceError, match=r"kafka did not become healthy within 1 s") as failed:
        services.up(["kafka"], services_dir=tmp_path / "svc", timeout=1)
    assert failed.value.log_file and failed.value.log_file.endswith("kafka.log")
    pid = int(pid_file.read_text())
    assert group_members(pid) == []


def test_the_cli_reports_a_failed_start_and_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAMZA_NB_SERVICES_DIR", str(tmp_path))
    monkeypatch.delenv("SAMZA_NB_SERVICES_ENV", raising=False)
    monkeypatch.setenv("SAMZA_NB_KAFKA_BROKER_BIN", str(_script(tmp_path, "exit 1")))
    assert cli.main(["services", "up", "kafka"]) == 1
    err = capsys.readouterr().err
    assert "kafka exited" in err and str(tmp_path / "kafka" / "kafka.log") in err


def test_a_configured_real_service_is_used_not_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        monkeypatch.setenv("SAMZA_NB_KAFKA_BOOTSTRAP", address)
        (info,) = services.up(["kafka"], services_dir=tmp_path)
    assert info.state == "external" and info.pids == () and info.address == address
    env = services.read_service_env(tmp_path / "services.env")
    assert env["SAMZA_NB_KAFKA_BOOTSTRAP"] == address
    assert not (tmp_path / "kafka" / "state.json").exists()


def test_an_unreachable_real_service_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("SAMZA_NB_ZK_CONNECT", f"127.0.0.1:{port}/chroot")
    with pytest.raises(ServiceError, match="SAMZA_NB_ZK_CONNECT"):
        services.up(["zookeeper"], services_dir=tmp_path)


def test_the_azure_key_is_never_in_the_printed_address(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "c2VjcmV0LWtleQ=="
    monkeypatch.setenv(
        "SAMZA_NB_AZURE_CONNECTION_STRING",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={secret};EndpointSuffix=core.windows.net",
    )
    (info,) = services.status(["azurite"])
    assert info.state == "external" and secret not in info.address and secret not in repr(info)
    assert "https://acct.blob.core.windows.net" in info.address


def test_unknown_service_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="known services: zookeeper, kafka, azurite, spark"):
        services.up(["kafak"], services_dir=tmp_path)
