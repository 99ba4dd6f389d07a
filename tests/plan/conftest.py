"""Fixtures for planner tests."""

from __future__ import annotations

from typing import Any

import pytest

from ._support import Streams


@pytest.fixture
def streams(tmp_path: Any) -> Streams:
    return Streams(tmp_path)
