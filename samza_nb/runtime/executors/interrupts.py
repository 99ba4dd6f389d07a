"""Ctrl-C while a job starts or its caller waits for it: a KeyboardInterrupt there, nothing more.

PySpark installs its own SIGINT handler with the SparkContext: it cancels every Spark job of
the session over py4j from inside the handler, then raises KeyboardInterrupt. While a samza_nb
job runs, that cancels its resident workers' Spark job in the middle of an epoch, and the
py4j call made from a signal handler prints tracebacks (a reentrant read, BrokenPipeError in
the workers) before the one-line message the job gives. While the caller waits, Ctrl-C only
raises KeyboardInterrupt in the waiting thread; the job then stops after its epoch in flight
and gives back its workers itself. PySpark's handler is back once the wait ends.

A job's start is such a block too, and it may be the one that starts Spark: PySpark's handler,
installed with the SparkContext, is then deferred to the end of the start
(:func:`handlers_deferred`), and py4j's own log line for a JVM call the interrupt ended is left
out within the block.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["handlers_deferred", "plain_interrupts"]

#: The handlers to put back when the open plain_interrupts blocks end (main thread only).
_restore: list[object] = []


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
    _restore.append(previous if previous is not None else signal.default_int_handler)
    loggers = [logging.getLogger(name) for name in _PY4J_LOGGERS]
    for logger in loggers:
        logger.addFilter(_py4j_interrupted)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(_py4j_interrupted)
        signal.signal(signal.SIGINT, _restore.pop())  # type: ignore[arg-type]


#: Where py4j logs a JVM call that an interrupt ended: the root logger (``logging.exception``)
#: and its connection's.
_PY4J_LOGGERS = ("", "py4j.clientserver", "py4j.java_gateway")
_PY4J_INTERRUPTED = (
    "KeyboardInterrupt while sending command.",
    "Exception occurred while shutting down connection",
)


def _py4j_interrupted(record: logging.LogRecord) -> bool:
    """py4j logs a KeyboardInterrupt that ends a JVM call, and the connection it then closes,
    with tracebacks, then raises the interrupt: within the block the interrupt alone is the
    news."""
    return not record.getMessage().startswith(_PY4J_INTERRUPTED)


@contextlib.contextmanager
def handlers_deferred() -> Iterator[None]:
    """Inside a :func:`plain_interrupts` block: a SIGINT handler a library installs within this
    one (PySpark's SparkContext does, when a job starts Spark) is not installed now but put
    back when the outer block ends, so Ctrl-C stays a plain KeyboardInterrupt meanwhile.
    Elsewhere, or outside the main thread, it changes nothing."""
    if not _restore or threading.current_thread() is not threading.main_thread():
        yield
        return
    install = signal.signal

    def deferring(signalnum: int, handler: Any) -> Any:
        if signalnum != signal.SIGINT:
            return install(signalnum, handler)
        previous, _restore[-1] = _restore[-1], handler
        return previous

    signal.signal = deferring
    try:
        yield
    finally:
        signal.signal = install
