"""Combinations the engine cannot run are refused when the job is planned, in one line naming
the keys and the supported alternative (issue #39: they failed at the first commit, or ran
without doing what the settings promise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.examples.page_views import build_app, generate_page_views, write_page_views
from samza_nb.runtime.compatibility import check_compatibility, check_standbys
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    write_page_views(system, generate_page_views(40, seed=3))
    return system


@pytest.mark.parametrize(
    ("coordinator", "store"),
    [("zookeeper", "kafka"), ("zookeeper", "embedded"), ("azure", "zookeeper"), ("azure", "embedded")],
)
def test_a_distributed_coordinator_with_another_metadata_store_is_refused_before_anything_starts(
    system: EmbeddedSystem, tmp_path: Path, coordinator: str, store: str
) -> None:
    config = {
        "job.home": str(tmp_path / "home"),
        "job.coordinator.factory": coordinator,
        "metadata.store.factory": store,
    }
    with pytest.raises(ConfigError) as raised:
        run_local(build_app(system, name="mixed"), config)
    message = str(raised.value)
    assert "\n" not in message
    assert f"job.coordinator.factory={coordinator} with metadata.store.factory={store}" in message
    assert f"set metadata.store.factory={coordinator}" in message
    assert not (tmp_path / "home").exists()  # refused before the job wrote anything


def test_standbys_under_exactly_once_are_refused_when_the_job_is_planned(
    system: EmbeddedSystem, tmp_path: Path
) -> None:
    config = {
        "job.home": str(tmp_path / "home"),
        "task.processing.guarantee": "exactly-once",
        "job.standbytasks.replication.factor": "2",
    }
    with pytest.raises(ConfigError, match=r"replication.factor=2 with task.processing.guarantee=exactly-once.*at-least-once"):
        run_local(build_app(system, name="warm"), config, processors=2)


@pytest.mark.parametrize(
    "entries",
    [
        {},
        {"job.coordinator.factory": "zookeeper"},
        {"job.coordinator.factory": "zookeeper", "metadata.store.factory": "zookeeper"},
        {"job.coordinator.factory": "azure", "metadata.store.factory": "Azure"},
        {"job.coordinator.factory": "embedded", "metadata.store.factory": "kafka"},
        {"task.processing.guarantee": "exactly-once", "job.standbytasks.replication.factor": "1"},
        {"task.processing.guarantee": "at-least-once", "job.standbytasks.replication.factor": "3"},
    ],
)
def test_the_combinations_that_work_pass(entries: dict[str, str]) -> None:
    check_compatibility(Config(entries))


def test_a_regroup_that_adds_standbys_under_exactly_once_is_refused() -> None:
    config = Config({"task.processing.guarantee": "exactly-once"})
    check_standbys(config, 1)
    with pytest.raises(ConfigError, match="replication.factor=2"):
        check_standbys(config, 2)
