"""What a failed task epoch reports: the operator or store, task, SSP and offset, the user's
raising line, the traceback, and the exception itself when it survives pickling (it then
becomes the driver's TaskError's ``__cause__``)."""

from __future__ import annotations

import pickle
import traceback

from samza_nb.runtime.epoch import EpochAssignment, EpochResult
from samza_nb.runtime.task.operators import UserFunctionError
from samza_nb.runtime.task.user_code import raising_frame

__all__ = ["failed_epoch"]


def failed_epoch(a: EpochAssignment, position: tuple[str, int] | None, error: Exception) -> EpochResult:
    """The result of task epoch ``a`` that failed with ``error`` while at ``position`` (stream
    partition key and offset, None when it was not reading): the epoch's offsets unchanged and
    the error described by operator or store, task, SSP and offset."""
    if isinstance(error, UserFunctionError):
        cause: BaseException = error.error
        what, location = f"operator {error.op_id}", error.user_location
        op_id: str | None = error.op_id
    else:
        cause, location, op_id = error, None, None
        store = getattr(error, "store", None)
        what = f"store {store}" if store else "the task"
    result = EpochResult(a.task_name, a.seq, a.start_offsets, a.control)
    result.error = {
        "op_id": op_id,
        "what": what,
        "task": a.task_name,
        "ssp": position[0] if position else None,
        "offset": position[1] if position else None,
        "error": f"{type(cause).__name__}: {cause}",
        "user_location": location,
        "user_code": isinstance(error, UserFunctionError),
        "raised_at": raising_frame(cause) if isinstance(error, UserFunctionError) else None,
        "traceback": "".join(traceback.format_exception(cause)),
        "cause": _pickled(cause),
    }
    return result


def _pickled(error: BaseException) -> bytes | None:
    """The exception itself when it survives pickling (it then becomes the TaskError's
    ``__cause__`` on the driver), else None."""
    try:
        data = pickle.dumps(error)
        pickle.loads(data)
    except Exception:
        return None
    return data
