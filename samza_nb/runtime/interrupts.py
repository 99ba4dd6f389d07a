"""Ctrl-C while a job's caller waits for it: a KeyboardInterrupt where it waits, nothing more.

PySpark installs its own SIGINT handler with the SparkContext: it cancels every Spark job of
the session over py4j from inside the handler, then raises KeyboardInterrupt. While a samza_nb
job runs, that cancels its resident workers' Spark job in the middle of an epoch, and the
py4j call made from a signal handler prints tracebacks (a reentrant read, BrokenPipeError in
the workers) before the one-line message the job gives. While the caller waits, Ctrl-C only
raises KeyboardInterrupt in the waiting thread; the job then stops after its epoch in flight
and gives back its workers itself. PySpark's handler is back once the wait ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["plain_interrupts"]


@contextlib.contextmanager
def plain_interrupts() -> Iterator[None]:
    """Within the block, SIGINT raises KeyboardInterrupt (Python's default handler); only in
    the main thread, where signal handlers run, and unless SIGINT is ignored (elsewhere the
    block changes nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:  # started in the background by a script: Ctrl-C is not for it
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
