"""The notebooks in a real browser: JupyterLab driven by Playwright in Debian's Chromium.

A JupyterLab server runs on 127.0.0.1 (a free port, a token, and temporary config, data,
runtime, settings and workspace folders, so nothing of the user's Jupyter setup is read or
changed). Playwright's Python package drives ``/usr/bin/chromium`` (never a downloaded browser:
``bash engine/install-browser-deps.sh`` installs Debian's). For each of notebooks 01–04, a copy
with small parameters is opened and run (Run All; 03 runs in two halves around a click on a
DrainStates view's Drain button), and the test checks what a person sees: every widget drawn
live (no "Error displaying widget", no "Loading widget…"), no traceback, no JVM notice in a
cell, the views' numbers, and simple interactions (RunProgress's "starting Spark…" phase and
final state, the StageGraph's fold and zoom, the drawing at a readable size inside the cell
with its own scrollbar, the DrainStates slider replaying epochs, the dark theme's tables, the
grouper explorer's grouper, kill, add and Apply, without a job and on a running one).
Then the papermill-executed copy of each notebook is opened without a kernel: every view must
still show its final snapshot (views that survive, samza_nb/notebook/widgets/_live.py).
Widget errors in the browser console fail the test. Screenshots go to ``.artifacts/browser/``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ._execution import ROOT, SMALL_PARAMETERS, execute, notebook_paths

pytestmark = [pytest.mark.slow, pytest.mark.spark]

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
WIDGET_ERRORS = ("Error displaying widget", "Loading widget")
# Browser console errors that concern the widgets (JupyterLab's own unrelated noise aside).
_WIDGET_CONSOLE = re.compile(r"widget|model not found|comm|ipywidgets", re.IGNORECASE)


def _require_browser() -> None:
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
            **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")},
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    _require_browser()
    server = Lab(tmp_path_factory.mktemp("lab"))
    try:
        yield server
    finally:
        try:
            server.shutdown_kernels()
        finally:
            server.close()


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


_OPEN: list[Any] = []


@pytest.fixture(autouse=True)
def _close_pages(lab: Lab) -> Iterator[None]:
    """After each test, pass or fail: its pages closed, its kernels (and JVMs) shut down."""
    yield
    while _OPEN:
        page = _OPEN.pop()
        if not page.is_closed():
            page.close()
    lab.shutdown_kernels()


class Notebook:
    """One notebook open in a page, with the console errors the page logged."""

    def __init__(self, browser: Any, lab: Lab, name: str, *, kernel: bool = True) -> None:
        self.lab = lab
        self.page = browser.new_page(viewport={"width": 1280, "height": 1000})
        _OPEN.append(self.page)
        self.console_errors: list[str] = []
        self.page.on(
            "console",
            lambda m: self.console_errors.append(m.text) if m.type == "error" else None,
        )
        self.page.on("pageerror", lambda e: self.console_errors.append(f"page error: {e}"))
        # A workspace of its own, reset: only this notebook opens (not the other tests' tabs).
        workspace = f"w{secrets.token_hex(4)}"
        self.page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={lab.token}")
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        self.answer_kernel_dialog(kernel=kernel)
        if kernel:
            self.page.wait_for_function(
                "document.querySelector('#jp-main-statusbar').innerText"
                ".includes('Python 3 (ipykernel) | Idle')",
                timeout=60_000,
            )

    def answer_kernel_dialog(self, *, kernel: bool) -> None:
        """JupyterLab may ask which kernel to start: its preferred one, or none."""
        dialog = self.page.locator(".jp-Dialog")
        try:
            dialog.wait_for(timeout=10_000 if kernel else 3_000)
        except Exception:  # no question asked
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


def _open_copy(browser: Any, lab: Lab, stem: str, edit: Callable[[Any], None] | None = None) -> Notebook:
    target = lab.root / f"{stem}.ipynb"
    _small_copy(NOTEBOOKS_BY_STEM[stem], target, Path(tempfile.mkdtemp(prefix=f"{stem}-", dir=lab.data)))
    if edit is not None:
        notebook = nbformat.read(target, as_version=4)
        edit(notebook)
        nbformat.write(notebook, target)
    return Notebook(browser, lab, target.name)


NOTEBOOKS_BY_STEM = {path.stem: path for path in notebook_paths()}


def _check_live(nb: Notebook, *, widgets: bool = True) -> None:
    nb.wait_widgets()
    if widgets:
        assert nb.page.locator(".jp-OutputArea-output .jupyter-widgets").count() > 0
    text = nb.text()
    assert "Using incubator modules" not in text
    assert not nb.widget_errors()
    assert not nb.widget_console_errors(), nb.widget_console_errors()


def _graph_geometry(cell: Any) -> dict[str, float]:
    """Sizes inside a StageGraph's output: the drawing, its text, its scroll box and the cell
    (empty while the widget swaps its drawing for a new one)."""
    return dict(
        cell.locator("svg.samza-plan").last.evaluate(
            """svg => {
                const box = svg.closest('.samza-plan-scroll');
                const text = svg.querySelector('g.samza-op text, g.samza-node text');
                const area = svg.closest('.jp-Cell');
                if (!box || !text || !area) return {};
                return {
                    svgWidth: svg.getBoundingClientRect().width,
                    fontPx: parseFloat(getComputedStyle(text).fontSize)
                        * svg.getBoundingClientRect().width / svg.viewBox.baseVal.width,
                    boxClient: box.clientWidth,
                    boxScroll: box.scrollWidth,
                    boxRight: box.getBoundingClientRect().right,
                    areaRight: area.getBoundingClientRect().right,
                    areaWidth: area.getBoundingClientRect().width,
                };
            }"""
        )
    )


# -- notebooks run live ---------------------------------------------------------------------------
def test_01_quickstart_live(browser: Any, lab: Lab) -> None:
    nb = _open_copy(browser, lab, "01-quickstart")
    seen: set[str] = set()

    def watch() -> None:
        text = nb.text()
        if nb.page.locator(".jp-OutputArea-output .jupyter-widgets").count():
            seen.add("live widget")
        if re.search(r"\d[\d,]* of [\d,]+ input messages read", text):
            seen.add("reading")

    nb.command("Run", "runmenu:run-all")
    nb.wait_idle(watch=watch)
    # RunProgress is a live widget while the job runs; once the job ended it has nothing left
    # to do and became its snapshot (HTML), which the saved notebook keeps.
    _check_live(nb, widgets=False)
    nb.assert_no_traceback()
    assert "live widget" in seen, "RunProgress was never drawn as a live widget"
    assert not nb.page.locator(".jp-OutputArea-output .jupyter-widgets").count()
    # RunProgress ends finished, 100%. (Its short "starting Spark…" phase is caught only when a
    # poll lands in it, so it is not asserted here: a warm machine starts the JVM in a blink.)
    text = nb.text()
    assert "1,200 of 1,200 input messages read (100%)" in text or re.search(
        r"([\d,]+) of \1 input messages read \(100%\)", text
    )
    assert "finished (average rate)" in text and "0.0/s" not in text
    assert "OK:" in text
    nb.shot("live")
    nb.close()


def test_02_stages_live_fold_zoom_and_dark_theme(browser: Any, lab: Lab) -> None:
    nb = _open_copy(browser, lab, "02-stages-and-shuffles")
    nb.command("Run", "runmenu:run-all")
    nb.wait_idle()
    _check_live(nb)
    nb.assert_no_traceback()
    # The live StageGraph (the one with counters): per-stage in/out/lag/rate.
    graph_cell = nb.cells().filter(has_text="sessions (job 1): finished").last
    text = graph_cell.inner_text()
    assert "rate" in text and "/s" in text
    # The drawing fits the cell at a readable size, inside its own scroll box.
    geometry = _graph_geometry(graph_cell)
    assert geometry["svgWidth"] <= geometry["areaWidth"], geometry
    assert geometry["fontPx"] >= 11, geometry
    # Zoom: larger than the cell, it scrolls in its box, whose right edge stays in the cell.
    graph_cell.locator("select").first.select_option(label="200%")

    def scrolls() -> bool:
        sizes = _graph_geometry(graph_cell)
        return bool(sizes) and sizes["boxScroll"] > sizes["boxClient"] + 50

    nb.wait_until(scrolls, "the zoomed drawing scrolling in its box", timeout=RENDER_TIMEOUT_S)
    zoomed = _graph_geometry(graph_cell)
    assert zoomed["fontPx"] == 22, zoomed
    assert zoomed["boxRight"] <= zoomed["areaRight"] + 1, zoomed
    graph_cell.locator("select").first.select_option(label="100%")
    # Fold a stage: it becomes one box.
    graph_cell.locator("button", has_text="stage 1").click()
    nb.wait_until(
        lambda: graph_cell.locator("g.samza-stage-folded").count() == 1,
        "stage 1 folding",
        timeout=RENDER_TIMEOUT_S,
    )
    assert "operators (folded)" in graph_cell.inner_text()
    nb.shot("live")

    # The dark theme: table headers and text stay readable (the page reloads; the kernel and
    # its widgets stay).
    lab.api(
        "PUT",
        "/lab/api/settings/@jupyterlab/apputils-extension:themes",
        {"raw": json.dumps({"theme": "JupyterLab Dark"})},
    )
    try:
        nb.save()
        nb.page.reload()
        nb.answer_kernel_dialog(kernel=True)
        nb.page.wait_for_selector(
            "body[data-jp-theme-light='false']", state="attached", timeout=60_000
        )
        nb.wait_until(
            lambda: nb.page.locator(".jupyter-widgets th").count() > 0,
            "the widgets after the reload",
            timeout=60,
        )
        nb.wait_widgets()
        contrast = nb.page.locator(".jupyter-widgets th").first.evaluate(
            """th => {
                const lum = c => {
                    const [r, g, b] = c.match(/\\d+/g).slice(0, 3).map(Number);
                    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
                };
                const s = getComputedStyle(th);
                return [lum(s.color), lum(s.backgroundColor)];
            }"""
        )
        text_lum, background_lum = contrast
        assert abs(text_lum - background_lum) > 100, contrast  # light text on a dark header
        nb.shot("dark")
    finally:
        lab.api(
            "PUT",
            "/lab/api/settings/@jupyterlab/apputils-extension:themes",
            {"raw": json.dumps({"theme": "JupyterLab Light"})},
        )
    assert not nb.widget_console_errors(), nb.widget_console_errors()
    nb.close()


def _drain_by_button(notebook: Any) -> None:
    """Before the drain cell, a DrainStates view of the running job; the drain cell then only
    waits for the drain its button started."""
    index = next(
        i for i, cell in enumerate(notebook.cells) if "%samza drain job --wait" in cell.source
    )
    notebook.cells[index].source = "job.wait(timeout=120)\ndrain_view = ui\ndrain_view"
    notebook.cells.insert(
        index,
        nbformat.v4.new_code_cell(
            "from samza_nb.notebook.widgets import DrainStatesWidget\n\nui = DrainStatesWidget(job)\nui"
        ),
    )


def test_03_drain_button_and_slider_live(browser: Any, lab: Lab) -> None:
    nb = _open_copy(browser, lab, "03-drain", edit=_drain_by_button)
    sources = [c.inner_text() for c in nb.cells().all()]
    drain_cell = next(i for i, s in enumerate(sources) if "drain_view = ui" in s)
    nb.select_cell(drain_cell)
    nb.command("Run", "notebook:run-all-above")
    nb.wait_idle(upto=sum(1 for s in sources[:drain_cell] if s.strip()) - _markdown(nb, drain_cell))
    _check_live(nb)
    view = nb.cells().nth(drain_cell - 1)
    assert "job running" in view.inner_text()
    started = time.monotonic()
    view.locator("button", has_text="Drain").click()
    nb.wait_until(
        lambda: "job drained" in view.inner_text(), "the drain the button started", timeout=120
    )
    drained_in = time.monotonic() - started
    assert view.locator("button", has_text="Drain").is_disabled()
    nb.select_cell(drain_cell)
    nb.command("Run", "notebook:run-all-below")
    nb.wait_idle()
    _check_live(nb)
    nb.assert_no_traceback()
    # The slider replays the drain: its first epoch shows nothing drained yet.
    summary = view.locator(".widget-html-content").first
    final = summary.inner_text()
    assert re.search(r"after epoch \d+: (\d+) of \1 SSPs drained · job drained", final), final
    readout = view.locator(".widget-readout").first
    low = int(float(view.locator(".widget-slider").first.evaluate(
        "el => el.querySelector('.noUi-handle').getAttribute('aria-valuemin')"
    )))
    readout.click()
    readout.press("Control+a")
    readout.type(str(low))
    readout.press("Enter")
    nb.wait_until(
        lambda: f"replaying epoch {low} of" in summary.inner_text(),
        "the slider replaying an early epoch",
        timeout=RENDER_TIMEOUT_S,
    )
    assert re.search(r": 0 of \d+ SSPs drained", summary.inner_text()), summary.inner_text()
    nb.shot("live")
    print(f"03: the Drain button drained the job in {drained_in:.1f} s")
    nb.close()


def _markdown(nb: Notebook, before: int) -> int:
    """Markdown cells among the first ``before`` cells (they have no prompt)."""
    return int(
        nb.page.eval_on_selector_all(
            ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell",
            f"els => els.slice(0, {before}).filter(e => !e.classList.contains('jp-CodeCell')).length",
        )
    )


def _cell_index(nb: Notebook, source: str) -> int:
    """The index of the first cell whose input holds ``source``."""
    inputs = nb.page.eval_on_selector_all(
        ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell",
        "els => els.map(e => (e.querySelector('.jp-InputArea') || e).innerText)",
    )
    return next(i for i, text in enumerate(inputs) if source in text)


def _explorer_summary(cell: Any) -> str:
    return str(cell.locator(".widget-html-content", has_text=" processors: ").first.inner_text())


def test_04_groupers_explorer_live(browser: Any, lab: Lab) -> None:
    """The grouper explorer as a person uses it: without a job (change grouper, kill, add;
    Apply off), on the running job (the count grouper's containers land on live processors, so
    Apply stays on; add a processor, Apply, the job regroups), then the rest of the notebook and
    Apply off on the finished job."""
    nb = _open_copy(browser, lab, "04-groupers-and-host-affinity")
    finish = _cell_index(nb, 'system.write("page-views", views[half:])')
    nb.select_cell(finish)
    nb.command("Run", "notebook:run-all-above")
    nb.wait_idle(upto=finish - _markdown(nb, finish))
    _check_live(nb)
    nb.assert_no_traceback()

    # Without a job: the notebook killed "1"; the kill list holds the live processors.
    alone = nb.cells().nth(_cell_index(nb, "explorer = GrouperExplorer(tasks=6"))
    assert _explorer_summary(alone).startswith("host-affinity over 2 processors: 2 of 6 tasks move")
    kill_list = alone.locator("select").nth(1)
    assert kill_list.evaluate("s => [...s.options].map(o => o.text)") == ["0", "2"]
    assert kill_list.input_value() == "0"
    alone.locator("select").first.select_option(label="group-by-container-count")
    nb.wait_until(
        lambda: _explorer_summary(alone).startswith("group-by-container-count over 2 processors"),
        "the explorer regrouping with another grouper",
        timeout=RENDER_TIMEOUT_S,
    )
    alone.locator("button", has_text="Add processor").click()
    nb.wait_until(
        lambda: "over 3 processors" in _explorer_summary(alone),
        "the explorer adding a processor",
        timeout=RENDER_TIMEOUT_S,
    )
    assert "added processor 3 at host-3 (draft only until Apply)" in alone.inner_text()
    assert alone.locator("button", has_text="Apply").is_disabled()

    # On the running job (processors 0 and 2 after the notebook's kill).
    live = nb.cells().nth(_cell_index(nb, "GrouperExplorer(job)"))
    assert "job runs" not in live.inner_text()
    apply = live.locator("button", has_text="Apply")
    live.locator("select").first.select_option(label="group-by-container-count")
    # Count groupers name containers 0 … N-1: container 1 goes to processor 2, a live one.
    nb.wait_until(
        lambda: _explorer_summary(live).startswith("group-by-container-count over 2 processors"),
        "the running job's explorer regrouping with the count grouper",
        timeout=RENDER_TIMEOUT_S,
    )
    assert "not live processors" not in live.inner_text()
    assert not apply.is_disabled()
    live.locator("select").first.select_option(label="host-affinity")
    live.locator("button", has_text="Add processor").click()
    nb.wait_until(lambda: not apply.is_disabled(), "Apply on", timeout=RENDER_TIMEOUT_S)
    apply.click()
    nb.wait_until(
        lambda: "applied: the job runs 3 processors" in live.inner_text(),
        "the job regrouping to the proposal",
        timeout=60,
    )
    nb.shot("applied")

    # The rest of the notebook: the job finishes with the same result as an undisturbed run.
    nb.select_cell(finish)
    nb.command("Run", "notebook:run-all-below")
    nb.wait_idle()
    _check_live(nb)
    nb.assert_no_traceback()
    assert "pages equal in both runs" in nb.text()
    nb.wait_until(
        lambda: "Apply is off: the job has finished" in live.inner_text(),
        "Apply off once the job finished",
        timeout=RENDER_TIMEOUT_S,
    )
    assert apply.is_disabled()
    nb.shot("live")
    nb.close()


# -- saved notebooks, without a kernel ----------------------------------------------------------
@pytest.mark.parametrize("stem", sorted(NOTEBOOKS_BY_STEM))
def test_papermill_output_opened_without_a_kernel_shows_every_view(
    browser: Any, lab: Lab, stem: str
) -> None:
    executed = execute(stem)
    saved = lab.root / "saved"
    saved.mkdir(exist_ok=True)
    shutil.copyfile(executed, saved / executed.name)
    notebook = nbformat.read(executed, as_version=4)
    snapshots = [
        output["data"]["text/plain"].splitlines()[0]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
        and output["data"].get("text/plain", "").startswith(
            ("StageGraph", "RunProgress", "DrainStates", "GrouperExplorer")
        )
    ]
    # The kernel the copy names (papermill's) is not known to this server: JupyterLab either
    # asks (the test answers "No Kernel") or starts its default kernel, a fresh one. Either
    # way no kernel holds the widgets' models: only what the file saved can be shown.
    nb = Notebook(browser, lab, f"saved/{executed.name}", kernel=False)
    time.sleep(3)  # give a widget manager time to complain if it were asked to draw
    assert not nb.widget_errors(), nb.widget_errors()
    text = nb.text()
    for line in snapshots:
        # Each view's snapshot heading (what its text/html starts with) is on the page.
        head = line.split(":")[0].split("(")[0].strip()
        assert head, line
    if stem == "03-drain":
        assert "SSPs drained · job drained" in text
        assert re.search(r"drainer \(job 1\): drained, epoch \d+", text)
    if stem == "01-quickstart":
        assert "input messages read (100%)" in text
    if stem == "02-stages-and-shuffles":
        assert "sessions (job 1): finished" in text
    nb.shot("saved")
    assert not nb.widget_console_errors(), nb.widget_console_errors()
    nb.close()
