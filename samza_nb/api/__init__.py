"""The user facade: StreamApplication, MessageStream, Windows, Triggers, tables and serdes.

>>> from datetime import timedelta
>>> from samza_nb.api import KV, StreamApplication, Windows
>>> from samza_nb.systems import EmbeddedSystem
>>> system = EmbeddedSystem("embedded")
>>> app = StreamApplication("page-views")
>>> views = app.input(system.input("page-views", partitions=4))
>>> counts = app.output(system.output("counts", partitions=4))
>>> _ = (views.filter(lambda v: v["country"] == "US")
...      .partition_by(lambda v: v["page"], op_id="by-page")
...      .window(Windows.keyed_tumbling(lambda kv: kv.key, timedelta(seconds=10),
...                                     initial=lambda: 0, fold=lambda kv, n: n + 1),
...              op_id="count")
...      .map(lambda pane: KV(pane.key.key, pane.message))
...      .send_to(counts))
>>> plan = app.plan()
>>> [len(stage.operators) for stage in plan.stages]
[3, 4]
>>> plan.window_ms
10000
"""

from samza_nb.api import serdes
from samza_nb.api.application import StreamApplication
from samza_nb.api.stream import MessageStream, OutputStream, Table
from samza_nb.api.windows import Triggers, Windows
from samza_nb.plan.execution_plan import ExecutionPlan, Stage, StreamInfo
from samza_nb.plan.kv import KV
from samza_nb.plan.planner import PlanWarning
from samza_nb.plan.tables import LocalTable
from samza_nb.plan.windows import AccumulationMode, FiringType, WindowKey, WindowPane

__all__ = [
    "KV",
    "AccumulationMode",
    "ExecutionPlan",
    "FiringType",
    "LocalTable",
    "MessageStream",
    "OutputStream",
    "PlanWarning",
    "Stage",
    "StreamApplication",
    "StreamInfo",
    "Table",
    "Triggers",
    "WindowKey",
    "WindowPane",
    "Windows",
    "serdes",
]
