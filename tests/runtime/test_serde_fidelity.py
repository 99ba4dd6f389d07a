"""What a user's values become on their way through the engine: the stream's own serde on
every path, and window state that reads the same whichever epoch a pane fires in. Run on the
in-process executor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from samza_nb.api import StreamApplication
from samza_nb.api.serdes import JsonSerde
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


class _Versioned(JsonSerde):
    """JSON with a version prefix: a subclass of the built-in serde with its own methods."""

    def to_bytes(self, value: Any) -> bytes:
        return b"v1:" + msgspec.json.encode(value)

    def from_bytes(self, data: bytes) -> Any:
        data = bytes(data)
        if not data.startswith(b"v1:"):
            msg = f"unversioned bytes {data!r}"
            raise ValueError(msg)
        return msgspec.json.decode(data[3:])


def test_a_subclass_of_the_json_serde_has_its_own_methods_called_on_every_path(
    system: EmbeddedSystem, tmp_path: Path
) -> None:
    system.create_stream("in", 1)
    system.write("in", [{"n": 1}, {"n": 2}], serde=_Versioned())
    system.end_stream("in")
    app = StreamApplication("versioned")
    out = app.output(system.output("out", partitions=1, serde=_Versioned()))
    (
        app.input(system.input("in", partitions=1, serde=_Versioned()))
        .partition_by(lambda m: m["n"], op_id="by-n")
        .map(lambda kv: {"n": kv.value["n"] * 10})
        .send_to(out)
    )
    job = run_local(app, {"job.home": str(tmp_path / "home")}, clock=StepClock(step_ms=1))
    assert [bytes(record.value) for _, record in system.read_records("out", 0, 0, 10)] == [
        b'v1:{"n":10}',
        b'v1:{"n":20}',
    ]
    assert job.collect("out")["value"].tolist() == [{"n": 10}, {"n": 20}]
