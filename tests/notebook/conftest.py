"""Fixtures the notebook tests share within a test session: executed notebooks and JupyterLab."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._execution import execute
from ._lab import CHROMIUM, CHROMIUM_ARGS, OPEN, SHOTS, Lab, require_browser


@pytest.fixture(scope="session")
def executed_notebook(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``executed_notebook(stem)``: the notebook run once under papermill for the whole session.

    Under xdist the folder is the parent of the workers' base temporary folders, which only
    the workers of this run share (the usual xdist pattern); without xdist, the base folder.
    """
    base = tmp_path_factory.getbasetemp()
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # set in xdist's workers only
    shared = (base.parent if worker else base) / "executed-notebooks"
    return functools.partial(execute, shared=shared)


@pytest.fixture(scope="session")
def _lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One JupyterLab server per test process, started when a browser test first needs it."""
    require_browser()
    server = Lab(tmp_path_factory.mktemp("lab"))
    try:
        yield server
    finally:
        try:
            server.shutdown_kernels()
        finally:
            server.close()


@pytest.fixture
def lab(_lab_server: Lab) -> Iterator[Lab]:
    """The shared server; after each test, pass or fail, its pages are closed and its kernels
    (and their JVMs) shut down, so the next test starts from an idle server."""
    yield _lab_server
    while OPEN:
        page = OPEN.pop()
        if not page.is_closed():
            page.close()
    _lab_server.shutdown_kernels()


@pytest.fixture(scope="module")
def browser(_lab_server: Lab) -> Iterator[Any]:
    """Debian's Chromium, driven by Playwright, for the tests of one file."""
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
