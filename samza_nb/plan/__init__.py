"""samza_nb.plan: operator specs, the planner and the ExecutionPlan, and how plans draw.

Importing the package registers the drawings as the way plans display themselves.
"""

from samza_nb.plan import drawing as _drawing
from samza_nb.plan.execution_plan import register_renderers

register_renderers(text=_drawing.render_text, svg=_drawing.render_svg, html=_drawing.render_html)
