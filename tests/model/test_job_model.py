"""JobModel JSON and helpers: Samza's field names and compatibility rules (§3.2–§3.4)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from samza_nb.errors import ModelError
from samza_nb.model import ContainerModel, JobModel, SystemStreamPartition, TaskMode, TaskModel


def _job_model() -> JobModel:
    task = TaskModel("test", [SystemStreamPartition("foo", "bar", 1)], 2)
    return JobModel({"a": "b"}, {"1": ContainerModel("1", {"test": task})})


def _job_model_json() -> dict[str, Any]:
    return {
        "config": {"a": "b"},
        "containers": {
            "1": {
                "processor-id": "1",
                "tasks": {
                    "test": {
                        "task-name": "test",
                        "system-stream-partitions": [
                            {"system": "foo", "stream": "bar", "partition": 1, "keyBucket": -1}
                        ],
                        "changelog-partition": 2,
                        "task-mode": "Active",
                    }
                },
            }
        },
    }


def test_serialize_uses_samza_field_names() -> None:
    written = json.loads(_job_model().to_json())
    expected = _job_model_json()
    assert written["config"] == expected["config"]
    assert written["containers"] == expected["containers"]
    assert written["max-change-log-stream-partitions"] == 3


def test_serialized_example_from_samza_md() -> None:
    ssp = SystemStreamPartition("kafka", "PVE", 3)
    active = TaskModel("Partition 3", [ssp], 3)
    standby = TaskModel("Standby-Partition 3-0", [ssp], 3, TaskMode.STANDBY)
    model = JobModel(
        {"job.name": "x"}, [ContainerModel("0", [active]), ContainerModel("0-0", [standby])]
    )
    text = model.to_json()
    assert text.startswith(
        '{"config":{"job.name":"x"},"containers":{"0":{"processor-id":"0","tasks"'
    )
    assert '{"system":"kafka","partition":3,"stream":"PVE","keyBucket":-1}' in text
    assert text.endswith('"max-change-log-stream-partitions":4}')
    assert JobModel.from_json(text) == model


def test_deserialize_round_trip_and_bytes() -> None:
    assert JobModel.from_dict(_job_model_json()) == _job_model()
    assert JobModel.from_json(_job_model().to_json().encode()) == _job_model()
    assert JobModel.from_json(_job_model().to_json(indent=2)) == _job_model()


def test_unknown_and_old_fields_are_ignored() -> None:
    raw = _job_model_json()
    raw["unknown_job_model_key"] = "x"
    raw["task-partition-mappings"] = {"1": None}
    raw["all-container-locality"] = {"1": None}
    raw["containers"]["1"]["unknown_container_model_key"] = "x"
    raw["containers"]["1"]["tasks"]["test"]["unknown_task_model_key"] = "x"
    assert JobModel.from_dict(raw) == _job_model()


def test_processor_id_wins_over_container_id() -> None:
    raw = _job_model_json()
    raw["containers"]["1"]["container-id"] = 123
    assert JobModel.from_dict(raw) == _job_model()


def test_only_container_id_is_read_as_decimal_string() -> None:
    raw = _job_model_json()
    del raw["containers"]["1"]["processor-id"]
    raw["containers"]["1"]["container-id"] = 1
    assert JobModel.from_dict(raw) == _job_model()


@pytest.mark.parametrize("field", [None, "id"])
def test_missing_processor_id_and_container_id_fails(field: str | None) -> None:
    raw = _job_model_json()
    del raw["containers"]["1"]["processor-id"]
    if field:
        raw["containers"]["1"][field] = 1
    with pytest.raises(ModelError, match="processor-id"):
        JobModel.from_dict(raw)


def test_non_numeric_container_id_is_an_error() -> None:
    raw = _job_model_json()
    del raw["containers"]["1"]["processor-id"]
    raw["containers"]["1"]["container-id"] = "abc"
    with pytest.raises(ModelError, match="non-numeric"):
        JobModel.from_dict(raw)


def test_task_without_mode_and_ssp_without_key_bucket() -> None:
    raw = copy.deepcopy(_job_model_json())
    task = raw["containers"]["1"]["tasks"]["test"]
    del task["task-mode"]
    del task["system-stream-partitions"][0]["keyBucket"]
    assert JobModel.from_dict(raw) == _job_model()
    task["task-mode"] = ""
    assert JobModel.from_dict(raw) == _job_model()


def test_bad_json_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="does not parse"):
        JobModel.from_json("{not json")
    with pytest.raises(ModelError, match="must be an object"):
        JobModel.from_json("[]")


def test_max_changelog_partitions() -> None:
    tasks = [TaskModel(f"Partition {i}", changelog_partition=i) for i in range(5)]
    model = JobModel({}, [ContainerModel("0", tasks[:2]), ContainerModel("1", tasks[2:])])
    assert model.max_changelog_partitions == 5
    assert JobModel().max_changelog_partitions == 0


def test_lookup_helpers() -> None:
    active = TaskModel("Partition 0", [SystemStreamPartition("k", "s", 0)], 0)
    standby = TaskModel("Standby-Partition 0-0", active.ssps, 0, TaskMode.STANDBY)
    model = JobModel(
        {}, [ContainerModel("p1", [active], "a"), ContainerModel("p2", [standby], "b")]
    )
    assert model.container_of("Partition 0") == model.containers["p1"]
    assert model.processor_of("Standby-Partition 0-0") == "p2"
    assert model.processor_of("nope") is None
    assert set(model.task_models()) == {"Partition 0", "Standby-Partition 0-0"}
    assert list(model.active_tasks()) == ["Partition 0"]
    assert list(model.standby_tasks()) == ["Standby-Partition 0-0"]
    assert model.task_to_processor(mode=TaskMode.ACTIVE) == {"Partition 0": "p1"}
    assert model.tasks_of("p2") == frozenset({"Standby-Partition 0-0"})
    assert model.tasks_of("p9") == frozenset()
    assert model.task_to_ssps() == {"Partition 0": active.ssps}
    assert "p1" in model._repr_html_() and "Standby-Partition 0-0" in model._repr_html_()


def test_job_model_is_immutable_and_checks_consistency() -> None:
    model = _job_model()
    with pytest.raises(AttributeError):
        model.config = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        model.containers["2"] = ContainerModel("2")  # type: ignore[index]
    with pytest.raises(ModelError, match="does not match"):
        JobModel({}, {"2": ContainerModel("1")})
    with pytest.raises(ModelError, match="twice"):
        JobModel({}, [ContainerModel("1"), ContainerModel("1")])
    twice = JobModel(
        {}, [ContainerModel("1", [TaskModel("t")]), ContainerModel("2", [TaskModel("t")])]
    )
    with pytest.raises(ModelError, match="two containers"):
        twice.task_models()
    assert hash(model) == hash(JobModel.from_json(model.to_json()))
