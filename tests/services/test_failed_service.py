"""A service killed behind our back: `status` says failed (exit 1) and drops its dead address
from the env file; `up` replaces it. A private ZooKeeper in the test's own services folder, so
the suite's shared services are never touched."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from samza_nb import cli, services
from samza_nb.services._process import ProcessRecord, is_alive
from samza_nb.services.zookeeper import zookeeper_session_ok

pytestmark = [pytest.mark.services, pytest.mark.slow]


def _env_entries(path: Path) -> dict[str, str]:
    return services.read_service_env(path) if path.exists() else {}


def test_a_killed_service_is_failed_and_up_replaces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (
        "SAMZA_NB_ZK_CONNECT",
        "SAMZA_NB_KAFKA_BOOTSTRAP",
        "SAMZA_NB_AZURE_CONNECTION_STRING",
    ):
        monkeypatch.delenv(name, raising=False)
    env_file = tmp_path / "services.env"
    monkeypatch.setenv("SAMZA_NB_SERVICES_DIR", str(tmp_path))
    monkeypatch.setenv("SAMZA_NB_SERVICES_ENV", str(env_file))
    try:
        assert cli.main(["services", "up", "zookeeper"]) == 0
        (first,) = services.status(["zookeeper"])
        assert first.state == "running" and len(first.pids) == 1
        assert _env_entries(env_file)["SAMZA_NB_ZK_CONNECT"] == first.address

        os.kill(first.pids[0], signal.SIGKILL)
        record = ProcessRecord("zookeeper", first.pids[0], first.pids[0], None, first.log_files[0])
        deadline = time.monotonic() + 10
        while is_alive(record) and time.monotonic() < deadline:
            time.sleep(0.05)
        capsys.readouterr()

        assert cli.main(["services", "status", "zookeeper"]) == 1
        out = capsys.readouterr().out
        assert "zookeeper  failed" in out and first.address in out and first.log_files[0] in out
        assert "SAMZA_NB_ZK_CONNECT" not in _env_entries(env_file)

        assert cli.main(["services", "up", "zookeeper"]) == 0
        (second,) = services.status(["zookeeper"])
        assert second.state == "running" and second.pids != first.pids
        assert _env_entries(env_file)["SAMZA_NB_ZK_CONNECT"] == second.address
        host, _, port = second.address.partition(":")
        assert zookeeper_session_ok(host, int(port))
        assert cli.main(["services", "status", "zookeeper"]) == 0
    finally:
        services.down(["zookeeper"], services_dir=tmp_path, env_file=env_file)


def test_an_external_address_that_does_not_answer_stays_out_of_the_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "services.env"
    monkeypatch.setenv("SAMZA_NB_ZK_CONNECT", "bob:s3/cr,et@127.0.0.1:1/jobs")
    with pytest.raises(services.ServiceError, match="nothing answers at 127.0.0.1:1") as raised:
        services.up(["zookeeper"], services_dir=tmp_path, env_file=env_file)
    assert "s3/cr" not in str(raised.value) and "127.0.0.1:1/jobs" in str(raised.value)
    assert "SAMZA_NB_ZK_CONNECT" not in _env_entries(env_file)
