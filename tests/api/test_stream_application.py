"""StreamApplication: properties, declarations, exports and display."""

from __future__ import annotations

import pytest

import samza_nb
import samza_nb.api as api
from samza_nb.api import ExecutionPlan, LocalTable, OutputStream, StreamApplication, Table, serdes
from samza_nb.config import Config
from samza_nb.systems import EmbeddedSystem


def test_top_level_exports() -> None:
    for name in ("StreamApplication", "KV", "Windows", "Triggers"):
        assert getattr(samza_nb, name) is getattr(api, name)
    for name in api.__all__:
        assert hasattr(api, name)
    assert api.serdes.json() == serdes.json()
    from samza_nb.api import AccumulationMode, FiringType, WindowKey, WindowPane  # noqa: F401


def test_properties() -> None:
    app = StreamApplication("clicks", job_id="3", config={"job.container.count": 2})
    assert (app.name, app.job_id) == ("clicks", "3")
    assert isinstance(app.config, Config) and app.config.get_int("job.container.count") == 2
    assert app.operator_ids == []
    assert "StreamApplication('clicks', job_id='3'" in repr(app)


def test_declarations(tmp_path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    app = StreamApplication("decl")
    out = app.output(system.output("out", serde="string"))
    assert isinstance(out, OutputStream) and out.partitions is None
    assert out.serde == serdes.string()
    assert "OutputStream(embedded.out" in repr(out)
    table = app.table(LocalTable("t", side_inputs=(system.input("side", partitions=2),)))
    assert isinstance(table, Table) and table.spec.table_id == "t"
    assert repr(table) == "Table('t', app='decl')"


def test_plan_config_overrides_do_not_change_the_app(tmp_path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    app = StreamApplication("o")
    app.input(system.input("in", partitions=2)).partition_by(len, op_id="p").sink(print)
    plan = app.plan({"job.intermediate.stream.partitions": 5})
    assert isinstance(plan, ExecutionPlan)
    assert plan.intermediate_streams == {"o-1-partition_by-p": 5}
    assert "job.intermediate.stream.partitions" not in app.config
    assert app.plan().intermediate_streams == {"o-1-partition_by-p": 2}


def test_app_displays_its_plan(tmp_path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    app = StreamApplication("disp")
    app.input(system.input("in", partitions=2)).map(len).sink(print)
    assert "<svg" in app._repr_html_()
    svg = app._repr_svg_()
    assert svg is not None and svg.startswith("<svg")


def test_missing_op_id_error_points_at_the_user_line(tmp_path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    app = StreamApplication("loc")
    views = app.input(system.input("in", partitions=2))
    with pytest.raises(samza_nb.errors.PlanError, match=r"test_stream_application.py:\d+"):
        views.partition_by(len)
