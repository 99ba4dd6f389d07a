"""The notebook surface: the ``%samza`` magics (:mod:`samza_nb.notebook.magics`) and widgets
(:mod:`samza_nb.notebook.widgets`).

``%load_ext samza_nb`` calls :func:`load_ipython_extension`. Nothing is imported here eagerly, so
``import samza_nb`` stays instant; IPython is loaded when the extension is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["load_ipython_extension"]


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register ``%samza`` and ``%%samza`` in ``ipython``."""
    from samza_nb.notebook.magics import SamzaMagics
    from samza_nb.notebook.status_line import show_spark_starts

    ipython.register_magics(SamzaMagics(ipython))
    show_spark_starts()
