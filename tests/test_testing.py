"""The pytest plugin samza_nb.testing: cheap to import, strict about services under CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from samza_nb import testing


def test_importing_the_plugin_loads_no_heavy_library() -> None:
    code = (
        "import sys, samza_nb.testing; "
        "print(sorted(m for m in ('pyspark', 'kazoo', 'azure', 'confluent_kafka') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.fixture
def no_services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMZA_NB_SERVICES_ENV", str(tmp_path / "missing.env"))
    for name in (
        "SAMZA_NB_ZK_CONNECT",
        "SAMZA_NB_KAFKA_BOOTSTRAP",
        "SAMZA_NB_AZURE_CONNECTION_STRING",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_services")
def test_missing_services_skip_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="samza-nb services up"):
        testing.load_service_env()


@pytest.mark.usefixtures("no_services")
def test_missing_services_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        testing.load_service_env()


@pytest.mark.usefixtures("no_services")
def test_a_configured_real_service_needs_no_env_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMZA_NB_KAFKA_BOOTSTRAP", "kafka.example:9092")
    assert testing.load_service_env() == {"SAMZA_NB_KAFKA_BOOTSTRAP": "kafka.example:9092"}


def test_unique_names_are_valid_everywhere() -> None:
    name = testing.unique_name()
    assert name != testing.unique_name()
    assert name.startswith("samza-nb-test-") and name == name.lower() and 3 <= len(name) <= 63
