"""PySpark's Python worker daemon, with samza_nb's task code imported before it forks.

Spark starts one daemon per executor (``spark.python.daemon.module``); the daemon forks a
Python worker whenever it needs one, and workers are reused. Every worker would otherwise
import the engine on its first task epoch (a quarter of a second here, paid inside the job's
first epoch by each worker). Imported once in the daemon, every fork starts with it, and the
imported objects are frozen out of the cycle collector's reach. If the import fails (an
executor without samza_nb), the daemon still serves every other PySpark job of the session.
"""

from __future__ import annotations

import gc

try:
    import samza_nb.runtime.executors.executor  # noqa: F401 - imported for the forks
except Exception:  # noqa: S110 - the daemon must serve other PySpark jobs anyway
    pass
gc.freeze()

from pyspark.daemon import manager  # noqa: E402

if __name__ == "__main__":
    manager()
