"""An executed notebook exports to HTML with its widget state, and its widgets render offline.

notebooks/03-drain.ipynb is executed (storing the widget state, as nbclient does by default),
exported with nbconvert's HTMLExporter, and opened in headless Chromium. The widget renderer
(``@jupyter-widgets/html-manager``'s ``embed-amd.js``) and require.js come from the npm
packages of engine/web (``bash engine/install-browser-deps.sh``), served from 127.0.0.1 like
the page itself. The test checks that the page loaded nothing from anywhere else, and that the
widget manager drew the StageGraph's SVG and the DrainStates table: the exported file holds
only the widget state for them, so what the browser shows inside the widget views was drawn
by JavaScript. The screenshot is kept in ``.artifacts/notebooks/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nbformat
import pytest

from ._execution import ARTIFACTS, ROOT, execute

CHROMIUM = Path("/usr/bin/chromium")
NODE_MODULES = ROOT / "engine" / "web" / "node_modules"
EMBED_AMD = "@jupyter-widgets/html-manager/dist/embed-amd.js"
REQUIRE_JS = "requirejs/require.js"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
NOTEBOOK = "03-drain"

# The lab template minus the two blocks that load MathJax and Mermaid from cdnjs; the notebook
# has no formulas or diagrams, and nothing may come from a CDN.
_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def _require_browser() -> None:
    missing = [
        str(path)
        for path in (CHROMIUM, NODE_MODULES / EMBED_AMD, NODE_MODULES / REQUIRE_JS)
        if not path.is_file()
    ]
    if missing:
        msg = f"missing {', '.join(missing)}: run bash engine/install-browser-deps.sh"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


class _Handler(SimpleHTTPRequestHandler):
    """Serves a folder and records the paths asked for (quietly: no log lines on stderr)."""

    requested: list[str]

    def do_GET(self) -> None:
        self.requested.append(urlsplit(self.path).path)
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def _serve(root: Path) -> Iterator[tuple[str, list[str]]]:
    requested: list[str] = []
    handler = type("Handler", (_Handler,), {"requested": requested})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, name="html-export-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _export(notebook: nbformat.NotebookNode, base_url: str, template_dir: Path) -> str:
    from nbconvert import HTMLExporter

    (template_dir / "offline").mkdir(parents=True)
    (template_dir / "offline" / "index.html.j2").write_text(_TEMPLATE, encoding="utf-8")
    (template_dir / "offline" / "conf.json").write_text(
        json.dumps({"base_template": "lab", "mimetypes": {"text/html": True}}), encoding="utf-8"
    )
    exporter = HTMLExporter(
        template_name="offline",
        extra_template_basedirs=[str(template_dir)],
        require_js_url=f"{base_url}/node_modules/{REQUIRE_JS}",
        widget_renderer_url=f"{base_url}/node_modules/{EMBED_AMD}",
    )
    body, _resources = exporter.from_notebook_node(notebook)
    return str(body)


def _chromium(url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        # Belt and braces: no host name resolves, so nothing could load from outside anyway.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        # Run the page's scripts (require.js, the widget manager) until idle, up to 30 s.
        "--virtual-time-budget=30000",
        *extra,
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)


def _page_requests(net_log: Path, origin: str) -> list[str]:
    """URLs the page (not the browser itself) requested, from Chromium's net log."""
    log = json.loads(net_log.read_text(encoding="utf-8"))
    event_types = {value: name for name, value in log["constants"]["logEventTypes"].items()}
    host = urlsplit(origin).hostname
    urls = []
    for event in log["events"]:
        params = event.get("params", {})
        if event_types.get(event["type"]) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        # Requests of the page carry its origin: as initiator, or in the isolation key of the
        # top-level navigation. Chromium's own background requests carry neither.
        if params.get("initiator") == origin or f"http://{host} " in params.get(
            "network_isolation_key", ""
        ):
            urls.append(params["url"])
    return urls


def _table_headers(view: Any) -> list[list[str]]:
    """The header rows of the tables inside a widget view's rendered HTML widgets."""
    return [
        [th.get_text() for th in table.find_all("th")]
        for table in view.select(".widget-html-content table")
    ]


def test_browser_packages_are_pinned_and_locked() -> None:
    # engine/install-browser-deps.sh runs `npm ci`, which installs package-lock.json exactly;
    # exact versions in package.json keep a re-lock from drifting to another html-manager.
    web = ROOT / "engine" / "web"
    package = json.loads((web / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((web / "package-lock.json").read_text(encoding="utf-8"))
    dependencies = package["dependencies"]
    assert set(dependencies) == {"@jupyter-widgets/html-manager", "requirejs"}
    for name, version in dependencies.items():
        assert version[0].isdigit(), f"{name} {version} is a range; pin an exact version"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    assert lock["packages"][""]["dependencies"] == dependencies


@pytest.mark.slow
@pytest.mark.spark
def test_drain_notebook_exports_to_html_and_its_widgets_render_offline(tmp_path: Path) -> None:
    from bs4 import BeautifulSoup

    _require_browser()
    executed = nbformat.read(execute(NOTEBOOK), as_version=4)
    state = executed.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    models = {model["model_name"] for model in state.values()}
    assert {"HTMLModel", "IntSliderModel", "VBoxModel"} <= models, models

    site = tmp_path / "site"
    site.mkdir()
    (site / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    with _serve(site) as (base_url, requested):
        html = _export(executed, base_url, tmp_path / "templates")
        static = BeautifulSoup(html, "html.parser")
        scripts = [tag.get("src") for tag in static.find_all("script") if tag.get("src")]
        assert scripts == [f"{base_url}/node_modules/{REQUIRE_JS}"], scripts
        assert f"'{base_url}/node_modules/{EMBED_AMD}'" in html
        assert "cdnjs" not in html and "unpkg.com" not in html and "jsdelivr" not in html
        views = static.find_all("script", type=WIDGET_VIEW)
        assert len(views) >= 2, (
            "the stage graph and the DrainStates view were not exported as widgets"
        )
        # Before JavaScript runs there is no rendered widget, only its state and view scripts.
        assert not static.select(".widget-html-content")
        (site / "drain.html").write_text(html, encoding="utf-8")
        shutil.copyfile(site / "drain.html", ARTIFACTS / f"{NOTEBOOK}.html")

        url = f"{base_url}/drain.html"
        net_log = tmp_path / "net-log.json"
        dom = _chromium(
            url, tmp_path / "profile-dom", f"--log-net-log={net_log}", "--dump-dom"
        ).stdout
        screenshot = ARTIFACTS / f"{NOTEBOOK}.png"
        screenshot.unlink(missing_ok=True)
        _chromium(
            url, tmp_path / "profile-shot", f"--screenshot={screenshot}", "--window-size=1280,4000"
        )

    (ARTIFACTS / f"{NOTEBOOK}.rendered.html").write_text(dom, encoding="utf-8")
    assert f"/node_modules/{EMBED_AMD}" in requested and f"/node_modules/{REQUIRE_JS}" in requested
    page_requests = _page_requests(net_log, base_url)
    assert f"{base_url}/node_modules/{EMBED_AMD}" in page_requests, page_requests
    outside = [u for u in page_requests if not u.startswith(f"{base_url}/")]
    assert not outside, f"the page requested URLs outside 127.0.0.1: {outside}"

    rendered = BeautifulSoup(dom, "html.parser")
    views = rendered.select(".jupyter-widgets.jp-OutputArea-output")
    assert any(view.select(".widget-html-content") for view in views), "no widget was rendered"
    # The StageGraph: the SVG of three stages (two shuffles) and the counters table, both drawn
    # by the widget manager inside HTML widget views.
    graphs = [
        view
        for view in views
        if ["stage", "operators", "reads", "writes", "in", "out", "lag"] in _table_headers(view)
    ]
    assert graphs, "the StageGraph was not rendered by the widget manager"
    stages = {
        g.get("data-stage") for g in graphs[-1].select(".widget-html-content svg g.samza-stage")
    }
    assert stages == {"0", "1", "2"}, stages
    # The DrainStates view: its epoch slider and a row per task and SSP, every one drained.
    drains = [view for view in views if any("upstream drains" in h for h in _table_headers(view))]
    assert drains, "the DrainStates view was not rendered by the widget manager"
    assert drains[0].select(".widget-slider"), "the DrainStates epoch slider was not rendered"
    table = next(
        table
        for table in drains[0].select(".widget-html-content table")
        if "upstream drains" in [th.get_text() for th in table.find_all("th")]
    )
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in table.select("tbody tr")]
    assert rows and all(row[2] == "✓" for row in rows), rows

    assert screenshot.is_file() and screenshot.stat().st_size > 10_000
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
