"""Live ipywidgets over the public API: the stage graph, DrainStates, the grouper explorer, run
progress, the latest messages of a stream or operator and an attached job (docs/notebook.md,
"Widgets").

Every widget reads the plan or the job handle and redraws on ``refresh()``; while a job runs a
daemon thread refreshes it until the job is done. Outside a live frontend each one displays a
static HTML and text snapshot.
"""

from samza_nb.notebook.widgets._live import settle_views
from samza_nb.notebook.widgets.attached_job import AttachedJobWidget
from samza_nb.notebook.widgets.drain_states import DrainStatesWidget
from samza_nb.notebook.widgets.grouper_explorer import GrouperExplorer
from samza_nb.notebook.widgets.observation_view import ObservationView
from samza_nb.notebook.widgets.run_progress import RunProgress
from samza_nb.notebook.widgets.show_view import ShowView
from samza_nb.notebook.widgets.stage_graph import StageGraph

__all__ = [
    "AttachedJobWidget",
    "DrainStatesWidget",
    "GrouperExplorer",
    "ObservationView",
    "RunProgress",
    "ShowView",
    "StageGraph",
    "settle_views",
]
