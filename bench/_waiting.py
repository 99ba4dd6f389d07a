"""A bounded wait shared by the benches (a helper module: `make bench` does not run it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, timeout: float, check: Callable[[], Any], poll: float = 0.05) -> Any:
    """``check()``'s first truthy value, polled every ``poll`` s; TimeoutError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(poll)
    msg = f"timed out after {timeout:g} s waiting for {what}"
    raise TimeoutError(msg)
