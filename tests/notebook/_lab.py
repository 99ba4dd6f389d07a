"""The harness of the browser tests: a JupyterLab server, and notebooks open in Debian's Chromium.

A JupyterLab server runs on 127.0.0.1 (a free port, a token, and temporary config, data,
runtime, settings and workspace folders, so nothing of the user's Jupyter setup is read or
changed); JupyterLab runs as a person's does: no services folder variable. Playwright's Python
package drives ``/usr/bin/chromium`` (never a downloaded browser: ``bash
engine/install-browser-deps.sh`` installs Debian's). The fixtures (conftest.py) start one server
per test process and share it between the browser test files: starting JupyterLab costs more
than any check of a saved notebook. Widget errors in the browser console fail a test.
Screenshots go to ``.artifacts/browser/``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ._execution import ROOT, SMALL_PARAMETERS, notebook_paths

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
SHOTS = ROOT / ".artifacts" / "browser"
# Bounds: a notebook with the small parameters runs in well under a minute on two cores.
RUN_TIMEOUT_S = 240.0
RENDER_TIMEOUT_S = 30.0
NOTEBOOKS_BY_STEM = {path.stem: path for path in notebook_paths()}
WIDGET_ERRORS = ("Error displaying widget", "Loading widget")
# Browser console errors that concern the widgets (JupyterLab's own unrelated noise aside).
_WIDGET_CONSOLE = re.compile(r"widget|model not found|comm|ipywidgets", re.IGNORECASE)


def require_browser() -> None:
    missing = [] if CHROMIUM.is_file() else [str(CHROMIUM)]
    try:
        import jupyterlab  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as error:
        missing.append(f"python package {error.name}")
    if missing:
        msg = f"missing {', '.join(missing)}: run make install and bash engine/install-browser-deps.sh"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_settings(settings: Path) -> None:
    """All cells in the DOM (no windowing), no news or update checks, the light theme."""
    files = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyterlab/apputils-extension/themes.jupyterlab-settings": {
            "theme": "JupyterLab Light"
        },
    }
    for name, value in files.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")


def _small_copy(source: Path, target: Path, data_dir: Path) -> None:
    """The notebook with the small parameters written into its parameters cell, its data in
    ``data_dir`` (under the test's temporary folder: a kernel shut down through the server's
    API is killed before its exit handlers remove a folder of the temp dir)."""
    notebook = nbformat.read(source, as_version=4)
    for cell in notebook.cells:
        if "parameters" in cell.metadata.get("tags", []):
            cell.source = "\n".join(
                [f"{name} = {value!r}" for name, value in SMALL_PARAMETERS.items()]
                + [f"data_dir = {str(data_dir)!r}"]
            )
    nbformat.write(notebook, target)


class Lab:
    """A JupyterLab server of the test, and the environment its kernels and tools share."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.root.mkdir()
        #: The notebooks' data folders.
        self.data = base / "notebook-data"
        self.data.mkdir()
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        dirs = {
            "JUPYTER_CONFIG_DIR": base / "config",
            "JUPYTER_DATA_DIR": base / "data",
            "JUPYTER_RUNTIME_DIR": base / "runtime",
            "JUPYTERLAB_SETTINGS_DIR": base / "settings",
            "JUPYTERLAB_WORKSPACES_DIR": base / "workspaces",
            "IPYTHONDIR": base / "ipython",
        }
        for path in dirs.values():
            path.mkdir()
        _write_settings(dirs["JUPYTERLAB_SETTINGS_DIR"])
        self.env = {
            # As a person's JupyterLab: no services folder named by the test run, so the
            # notebooks find what `make services-up` started by themselves.
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith("JUPYTER")
                and k not in ("SAMZA_NB_SERVICES_DIR", "SAMZA_NB_SERVICES_ENV")
            },
            **{name: str(path) for name, path in dirs.items()},
            # The kernel ("python3", argv "python") is this virtualenv's interpreter.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        self.env.pop("PYTEST_CURRENT_TEST", None)
        self.log = (base / "lab.log").open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.root}",
                "--ServerApp.terminals_enabled=False",
                # No plugin manager reaching out to PyPI.
                "--LabApp.extension_manager=readonly",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                msg = f"JupyterLab exited with {self.process.returncode}; see {self.log.name}"
                raise RuntimeError(msg)
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        msg = f"JupyterLab did not answer on {self.url} within 60 s"
        raise RuntimeError(msg)

    def api(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            f"{self.url}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def shutdown_kernels(self) -> None:
        """End every session and kernel (the live runs' JVMs with them)."""
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.log.close()



#: The pages the running test opened; the ``lab`` fixture closes them after it.
OPEN: list[Any] = []


class Notebook:
    """One notebook open in a page, with the console errors the page logged."""

    def __init__(self, browser: Any, lab: Lab, name: str, *, kernel: bool = True) -> None:
        self.lab = lab
        self.page = browser.new_page(viewport={"width": 1280, "height": 1000})
        OPEN.append(self.page)
        self.console_errors: list[str] = []
        self.page.on(
            "console",
            lambda m: self.console_errors.append(m.text) if m.type == "error" else None,
        )
        self.page.on("pageerror", lambda e: self.console_errors.append(f"page error: {e}"))
        # A workspace of its own, reset: only this notebook opens (not the other tests' tabs).
        workspace = f"w{secrets.token_hex(4)}"
        self.page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={lab.token}")
        # JupyterLab first draws a one-cell placeholder, then the file's cells: wait for those.
        cells = len(lab.api("GET", f"/api/contents/{name}?content=1")["content"]["cells"])
        self.page.wait_for_function(
            "n => document.querySelectorAll("
            "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell').length === n",
            arg=cells,
            timeout=60_000,
        )
        self.answer_kernel_dialog(kernel=kernel)
        if kernel:
            self.page.wait_for_function(
                "document.querySelector('#jp-main-statusbar').innerText"
                ".includes('Python 3 (ipykernel) | Idle')",
                timeout=60_000,
            )

    def answer_kernel_dialog(self, *, kernel: bool) -> None:
        """JupyterLab may ask which kernel to start: its preferred one, or none.

        It asks when it does not know the kernel the file names; otherwise it starts that one
        and the status bar names it. Either shows within a second or two of the cells, so the
        wait ends at the first of the two instead of waiting out a question never asked.
        """
        dialog = self.page.locator(".jp-Dialog")
        try:
            self.page.wait_for_function(
                "document.querySelector('.jp-Dialog') || !(document.querySelector("
                "'#jp-main-statusbar')?.innerText ?? 'No Kernel').includes('No Kernel')",
                timeout=30_000,
            )
        except Exception:  # neither: no question asked, no kernel started yet
            return
        if not dialog.count():
            return
        if kernel:
            dialog.locator("button.jp-mod-accept").click()
        else:
            dialog.locator("button", has_text="No Kernel").click()
        dialog.wait_for(state="detached", timeout=10_000)

    def save(self) -> None:
        self.page.keyboard.press("Control+s")
        self.page.wait_for_function(
            "!document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)')"
            ".classList.contains('jp-mod-dirty')"
            " && !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
            timeout=30_000,
        )

    # -- reading ---------------------------------------------------------------------------
    def text(self) -> str:
        return str(self.page.inner_text(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"))

    def cells(self) -> Any:
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")

    def prompts(self) -> list[str]:
        return [
            p.strip()
            for p in self.page.eval_on_selector_all(
                ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt",
                "els => els.map(e => e.textContent)",
            )
        ]

    def widget_errors(self) -> list[str]:
        text = self.text()
        return [marker for marker in WIDGET_ERRORS if marker in text]

    def widget_console_errors(self) -> list[str]:
        return [e for e in self.console_errors if _WIDGET_CONSOLE.search(e)]

    def assert_no_traceback(self) -> None:
        text = self.text()
        assert "Traceback" not in text, text[text.index("Traceback") - 400 :][:2000]

    # -- acting ----------------------------------------------------------------------------
    def command(self, menu: str, command: str) -> None:
        """Click a main-menu item, found by its JupyterLab command id."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
        self.page.locator(f'.lm-Menu-item[data-command="{command}"]').first.click()

    def select_cell(self, index: int) -> None:
        self.cells().nth(index).locator(".jp-InputPrompt").click()

    def wait_until(
        self, done: Callable[[], bool], what: str, timeout: float = RUN_TIMEOUT_S
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done():
                return
            self.assert_no_traceback()
            time.sleep(0.25)
        self.shot("timeout")
        msg = f"{what} not within {timeout} s"
        raise AssertionError(msg)

    def wait_idle(self, upto: int | None = None, *, watch: Callable[[], None] | None = None) -> None:
        """Until every code cell (or the first ``upto``) ran and none runs; ``watch`` is
        called at every poll (to catch passing phases)."""

        def finished() -> bool:
            if watch is not None:
                watch()
            prompts = self.prompts()[:upto]
            return bool(prompts) and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts)

        self.wait_until(finished, "the cells' run")

    def wait_widgets(self) -> None:
        self.wait_until(
            lambda: not self.widget_errors(), "the widgets' rendering", timeout=RENDER_TIMEOUT_S
        )

    def shot(self, suffix: str) -> list[Path]:
        """The window, then each view (widget or snapshot) on its own, scrolled into sight."""
        name = Path(self.page.url.split("?")[0]).stem
        paths = [SHOTS / f"{name}-{suffix}.png"]
        self.page.screenshot(path=str(paths[0]))
        views = self.page.locator(
            ".jp-OutputArea-output > .jupyter-widgets, "
            ".jp-OutputArea-output.jp-RenderedHTMLCommon:has(table)"
        )
        for index in range(min(views.count(), 8)):
            path = SHOTS / f"{name}-{suffix}-view{index + 1}.png"
            try:
                views.nth(index).scroll_into_view_if_needed(timeout=5_000)
                views.nth(index).screenshot(path=str(path), timeout=10_000)
            except Exception:  # a view that vanished (re-published) is not worth a failure
                continue
            paths.append(path)
        return paths

    def close(self) -> None:
        self.page.close()


def open_copy(browser: Any, lab: Lab, stem: str, edit: Callable[[Any], None] | None = None) -> Notebook:
    target = lab.root / f"{stem}.ipynb"
    _small_copy(NOTEBOOKS_BY_STEM[stem], target, Path(tempfile.mkdtemp(prefix=f"{stem}-", dir=lab.data)))
    if edit is not None:
        notebook = nbformat.read(target, as_version=4)
        edit(notebook)
        nbformat.write(notebook, target)
    return Notebook(browser, lab, target.name)


def check_live(nb: Notebook, *, widgets: bool = True) -> None:
    nb.wait_widgets()
    if widgets:
        assert nb.page.locator(".jp-OutputArea-output .jupyter-widgets").count() > 0
    text = nb.text()
    assert "Using incubator modules" not in text
    assert not nb.widget_errors()
    assert not nb.widget_console_errors(), nb.widget_console_errors()


def markdown_before(nb: Notebook, before: int) -> int:
    """Markdown cells among the first ``before`` cells (they have no prompt)."""
    return int(
        nb.page.eval_on_selector_all(
            ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell",
            f"els => els.slice(0, {before}).filter(e => !e.classList.contains('jp-CodeCell')).length",
        )
    )


def cell_index(nb: Notebook, source: str) -> int:
    """The index of the first cell whose input holds ``source``."""
    inputs = nb.page.eval_on_selector_all(
        ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell",
        "els => els.map(e => (e.querySelector('.jp-InputArea') || e).innerText)",
    )
    return next(i for i, text in enumerate(inputs) if source in text)


def explorer_summary(cell: Any) -> str:
    return str(cell.locator(".widget-html-content", has_text=" processors: ").first.inner_text())
