"""samza_nb: Apache-Samza-style stream pipelines, defined in notebooks, run on Apache Spark.

The handful of names a notebook needs are importable from here; everything else is imported
from its module (``samza_nb.api``, ``samza_nb.systems`` …). Names are loaded lazily so that
``import samza_nb`` stays instant and never starts Spark.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "KV",
    "StreamApplication",
    "Triggers",
    "Windows",
    "__version__",
    "load_ipython_extension",
    "run",
]

_LAZY = {
    "StreamApplication": "samza_nb.api",
    "KV": "samza_nb.api",
    "Windows": "samza_nb.api",
    "Triggers": "samza_nb.api",
    "run": "samza_nb.job",
    "load_ipython_extension": "samza_nb.notebook",
}

if TYPE_CHECKING:
    from samza_nb.api import KV, StreamApplication, Triggers, Windows
    from samza_nb.job import run
    from samza_nb.notebook import load_ipython_extension


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'samza_nb' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
