"""docs/map.md, the "where things are" map, matches the tree: a module added, moved, removed
or given a new docstring shows up there (engine/where_things_are.py writes it anew)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _writer() -> object:
    spec = importlib.util.spec_from_file_location("where_things_are", ROOT / "engine" / "where_things_are.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_map_lists_every_module_as_the_tree_has_it() -> None:
    writer = _writer()
    expected = writer.render()  # type: ignore[attr-defined]
    assert (ROOT / "docs" / "map.md").read_text() == expected, (
        "docs/map.md is stale: run .venv/bin/python engine/where_things_are.py"
    )


def test_the_map_names_every_module() -> None:
    text = (ROOT / "docs" / "map.md").read_text()
    for path in (ROOT / "samza_nb").rglob("*.py"):
        if path.name != "__init__.py":
            assert text.count(f"- `{path.name}`: ") >= 1, path
