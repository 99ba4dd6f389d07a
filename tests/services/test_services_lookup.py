"""One way to find the services from anywhere (samza_nb.services._base.find_services_dir):
``$SAMZA_NB_SERVICES_DIR``, else the project root above the current folder, else the checkout
this package runs from; an address in the environment wins over the env file; a missing one is
a one-line ServiceError that says how to start it."""

from __future__ import annotations

from pathlib import Path

import pytest

from samza_nb import services
from samza_nb.errors import ServiceError
from samza_nb.services import _base
from samza_nb.services._base import ServicesHome, find_services_dir

_VARIABLES = (
    "SAMZA_NB_SERVICES_DIR",
    "SAMZA_NB_SERVICES_ENV",
    "SAMZA_NB_ZK_CONNECT",
    "SAMZA_NB_KAFKA_BOOTSTRAP",
    "SAMZA_NB_AZURE_CONNECTION_STRING",
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root (pyproject.toml and a Makefile with services-up) with a notebooks/
    folder, no services variable set, and no checkout to fall back to."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_base, "repo_engine_dir", lambda: None)
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (root / "Makefile").write_text("services-up:\n\tsamza-nb services up\n", encoding="utf-8")
    return root


def _env_file(folder: Path, **entries: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "services.env"
    path.write_text("".join(f"{key}='{value}'\n" for key, value in entries.items()), encoding="utf-8")
    return path


def test_a_notebook_folder_finds_the_project_roots_services(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env_file(project / ".services", SAMZA_NB_KAFKA_BOOTSTRAP="127.0.0.1:9")
    monkeypatch.chdir(project / "notebooks")
    root, found_by = find_services_dir()
    assert root == project / ".services"
    assert str(project) in found_by
    assert services.service_address("SAMZA_NB_KAFKA_BOOTSTRAP") == "127.0.0.1:9"


def test_services_not_started_yet_go_to_the_project_root_not_the_notebook_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "notebooks")
    home = ServicesHome.resolve()
    assert home.root == project / ".services"
    assert home.env_file == project / ".services" / "services.env"
    assert "project root" in home.found_by


def test_the_nearest_project_wins_over_a_farther_env_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env_file(project / ".services", SAMZA_NB_ZK_CONNECT="127.0.0.1:1")
    inner = project / "sub" / "other-project"
    inner.mkdir(parents=True)
    (inner / ".git").mkdir()
    monkeypatch.chdir(inner)
    assert find_services_dir()[0] == inner / ".services"


def test_an_env_file_above_marks_the_root_without_a_project_marker(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    _env_file(plain / ".services", SAMZA_NB_ZK_CONNECT="127.0.0.1:2")
    (plain / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(plain / "a" / "b")
    assert find_services_dir()[0] == plain / ".services"
    assert services.service_address("SAMZA_NB_ZK_CONNECT") == "127.0.0.1:2"


def test_the_users_services_dir_wins(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env_file(project / ".services", SAMZA_NB_ZK_CONNECT="127.0.0.1:1")
    mine = tmp_path / "my-services"
    _env_file(mine, SAMZA_NB_ZK_CONNECT="127.0.0.1:3")
    monkeypatch.setenv("SAMZA_NB_SERVICES_DIR", str(mine))
    monkeypatch.chdir(project / "notebooks")
    assert find_services_dir() == (mine, "$SAMZA_NB_SERVICES_DIR")
    assert services.service_address("SAMZA_NB_ZK_CONNECT") == "127.0.0.1:3"


def test_the_environment_wins_over_the_env_file_and_needs_none(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "notebooks")
    monkeypatch.setenv("SAMZA_NB_KAFKA_BOOTSTRAP", "broker.example:9092")
    assert services.service_address("SAMZA_NB_KAFKA_BOOTSTRAP") == "broker.example:9092"
    _env_file(project / ".services", SAMZA_NB_KAFKA_BOOTSTRAP="127.0.0.1:9")
    assert services.service_address("SAMZA_NB_KAFKA_BOOTSTRAP") == "broker.example:9092"


def test_a_checkout_running_its_services_is_found_from_a_folder_outside_any_project(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "engine").mkdir(parents=True)
    _env_file(checkout / ".services", SAMZA_NB_ZK_CONNECT="127.0.0.1:4")
    monkeypatch.setattr(_base, "repo_engine_dir", lambda: checkout / "engine")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    root, found_by = find_services_dir()
    assert root == checkout / ".services"
    assert "checkout" in found_by
    # Without its env file (nothing runs there) the current folder is used.
    (checkout / ".services" / "services.env").unlink()
    assert find_services_dir()[0] == elsewhere / ".services"


def test_a_missing_address_is_one_line_that_says_make_services_up(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "notebooks")
    with pytest.raises(ServiceError) as raised:
        services.service_address("SAMZA_NB_KAFKA_BOOTSTRAP")
    message = str(raised.value)
    assert "\n" not in message
    assert "SAMZA_NB_KAFKA_BOOTSTRAP" in message
    assert f"`make services-up` in {project}" in message
    assert str(project / ".services" / "services.env") in message
    # An env file without the key says the same, and so does read_service_env without a file.
    _env_file(project / ".services", SAMZA_NB_ZK_CONNECT="127.0.0.1:1")
    with pytest.raises(ServiceError, match="make services-up"):
        services.service_address("SAMZA_NB_KAFKA_BOOTSTRAP")
    (project / ".services" / "services.env").unlink()
    with pytest.raises(ServiceError, match="make services-up"):
        services.read_service_env()


def test_outside_a_make_project_the_hint_is_the_cli(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "Makefile").unlink()
    monkeypatch.chdir(project)
    with pytest.raises(ServiceError, match=r"`samza-nb services up zookeeper` in "):
        services.service_address("SAMZA_NB_ZK_CONNECT")
