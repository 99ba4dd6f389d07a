"""The static view shown in place of a live widget that no kernel holds any more.

A widget view needs its model, which lives in the kernel. A notebook saved from JupyterLab and
reopened (the kernel gone, or a new one that never made the model) cannot draw it: JupyterLab
shows "Error displaying widget: model not found", not the HTML beside the view in its own
bundle (an output shows one MIME type, and the widget's ranks first).

So a live view displayed where a person works gets a second output just before it: the view's
snapshot, kept current (:meth:`Fallback.update`), plus a few CSS rules. JupyterLab marks every
output ``.jp-OutputArea-child`` and a drawn widget ``.jp-OutputArea-output > .jupyter-widgets``:

* while the widget is drawn, its fallback is hidden, so a live notebook shows the widget once;
* while it is not (loading, or no model: a reopened notebook), the widget's output is hidden and
  the fallback shows the view's last snapshot instead of an error.

The rules travel in the output itself (a ``<style>`` element), so nothing needs installing;
JupyterLab applies them in a trusted notebook, which a notebook saved from JupyterLab is (its
outputs came from its kernel). A view that becomes its snapshot for good (``freeze``) turns its
fallback into an output that hides itself. Batch runs (papermill) freeze their views and get no
fallback.
"""

from __future__ import annotations

import uuid
from typing import Any

__all__ = ["Fallback"]

_MARK = "samza-nb-fallback"
_SPENT = "samza-nb-fallback-spent"
_DRAWN = ".jp-OutputArea-output > .jupyter-widgets"
_RULES = (
    f".jp-OutputArea-child:has(.{_MARK}):has(+ .jp-OutputArea-child {_DRAWN})"
    "{display:none}"
    f".jp-OutputArea-child:has(.{_MARK}) + .jp-OutputArea-child:not(:has({_DRAWN}))"
    "{display:none}"
    f".jp-OutputArea-child:has(.{_SPENT}){{display:none}}"
)


class Fallback:
    """The fallback output of one displayed view."""

    def __init__(self) -> None:
        self.display_id = f"samza-nb-fallback-{uuid.uuid4().hex}"
        self.shown = False

    @staticmethod
    def bundle(html: str, text: str) -> dict[str, Any]:
        return {
            "text/html": f'<style>{_RULES}</style><div class="{_MARK}">{html}</div>',
            "text/plain": text,
        }

    def show(self, html: str, text: str) -> None:
        """Display it (call just before displaying the widget)."""
        from IPython.display import display

        display(self.bundle(html, text), raw=True, display_id=self.display_id)
        self.shown = True

    def update(self, html: str, text: str) -> None:
        """Show the view's current snapshot."""
        if not self.shown:
            return
        from IPython.display import update_display

        update_display(self.bundle(html, text), raw=True, display_id=self.display_id)

    def retire(self) -> None:
        """The view became its snapshot itself: the fallback hides itself for good."""
        if not self.shown:
            return
        from IPython.display import update_display

        bundle = {"text/html": f'<style>{_RULES}</style><div class="{_SPENT}"></div>', "text/plain": ""}
        update_display(bundle, raw=True, display_id=self.display_id)
