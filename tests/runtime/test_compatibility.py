"""Combinations the engine cannot run are refused when the job is planned, in one line naming
the keys and the supported alternative (issue #39: they failed at the first commit, or ran
without doing what the settings promise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.examples.page_views import build_app, generate_page_views, write_page_views
from samza_nb.job.compatibility import (
    check_compatibility,
    check_standby_locations,
    check_streams_reach_executors,
)
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


@pytest.mark.parametrize(
    "entries",
    [
        {},
        {"job.coordinator.factory": "zookeeper"},
        {"job.coordinator.factory": "zookeeper", "metadata.store.factory": "zookeeper"},
        {"job.coordinator.factory": "azure", "metadata.store.factory": "Azure"},
        {
            "job.coordinator.factory": "embedded",
            "metadata.store.factory": "kafka",
            "job.coordinator.system": "kafka",
            "systems.kafka.bootstrap.servers": "127.0.0.1:9092",
        },
        {"task.processing.guarantee": "exactly-once", "job.standbytasks.replication.factor": "1"},
        {"task.processing.guarantee": "exactly-once", "job.standbytasks.replication.factor": "2"},
        {"task.processing.guarantee": "at-least-once", "job.standbytasks.replication.factor": "3"},
    ],
)
def test_the_combinations_that_work_pass(entries: dict[str, str]) -> None:
    check_compatibility(Config(entries))


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (
            {"task.processing.guarantee": "exactly-once"},
            "task.processing.guarantee=exactly-once needs a Kafka checkpoint system; task.checkpoint.system / "
            "job.default.system is 'embedded' (EmbeddedSystem), not a KafkaSystem: put the job's streams on "
            "Kafka (samza_nb.systems.KafkaSystem), or use task.processing.guarantee=at-least-once",
        ),
        (
            {"metadata.store.factory": "kafka"},
            "metadata.store.factory=kafka keeps the job's metadata in a coordinator stream on a Kafka cluster, "
            "but system 'embedded' (job.coordinator.system, else job.default.system) has no bootstrap servers: "
            "name a Kafka system in job.coordinator.system and set its systems.<name>.bootstrap.servers (or "
            "$SAMZA_NB_KAFKA_BOOTSTRAP), or use metadata.store.factory=embedded",
        ),
        (
            {"job.standbytasks.replication.factor": "2", "processor.locations": "rack-a"},
            "job.standbytasks.replication.factor=2 places each task's copies at 2 distinct locations, but the "
            "job's 1 processor(s) are at 1 (rack-a): run processors=2 with processor.locations naming 2 "
            "locations, or set job.standbytasks.replication.factor=1",
        ),
    ],
)
def test_what_failed_once_the_job_had_started_is_refused_before_it_writes_anything(
    system: EmbeddedSystem, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: dict[str, str], expected: str
) -> None:
    monkeypatch.delenv("SAMZA_NB_KAFKA_BOOTSTRAP", raising=False)
    config = {"job.home": str(tmp_path / "home"), **entries}
    with pytest.raises(ConfigError) as raised:
        run_local(build_app(system, name="late"), config)
    assert str(raised.value) == expected
    assert not (tmp_path / "home").exists()


def test_two_locations_carry_two_copies_and_a_distributed_process_may_start_alone() -> None:
    two = Config({"job.standbytasks.replication.factor": "2"})
    check_standby_locations(two, {"0": "rack-a", "1": "rack-b"})
    with pytest.raises(ConfigError, match="replication.factor=2 .* at 1 \\(rack-a\\)"):
        check_standby_locations(two, {"0": "rack-a", "1": "rack-a"})
    # The processes of a ZooKeeper job join one at a time: the first runs without standbys.
    check_standby_locations(Config({**two, "job.coordinator.factory": "zookeeper"}), {"p": "rack-a"})


# -- streams the executors cannot reach -----------------------------------------------------------


@pytest.mark.parametrize("master", ["spark://10.213.0.1:7077", "yarn", "spark://spark-master:7077"])
def test_embedded_streams_on_a_master_with_executors_elsewhere_are_refused(
    system: EmbeddedSystem, tmp_path: Path, master: str
) -> None:
    from samza_nb.job import run

    config = {"job.home": str(tmp_path / "home"), "spark.master": master}
    with pytest.raises(ConfigError) as raised:
        run(build_app(system, name="far"), config, executor="spark")
    message = str(raised.value)
    assert "\n" not in message
    assert "on the embedded system 'embedded'" in message and f"spark.master={master}" in message
    assert "KafkaSystem" in message and "local[*]" in message
    assert not (tmp_path / "home").exists()  # refused before the job wrote anything


@pytest.mark.parametrize("master", ["local[2]", "spark://127.0.0.1:7077", "spark://localhost:7077"])
def test_embedded_streams_run_where_every_executor_shares_this_disk(
    system: EmbeddedSystem, master: str
) -> None:
    plan = build_app(system, name="near").plan(Config({"spark.master": master}))
    check_streams_reach_executors(plan, "spark")
    far = build_app(system, name="far").plan(Config({"spark.master": "spark://10.0.0.9:7077"}))
    check_streams_reach_executors(far, "local")  # task epochs in this process: nothing to reach
