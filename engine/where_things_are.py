"""Writes docs/map.md, the "where things are" map: every package and module of samza_nb with
the first sentence of its docstring, in the tree's order. tests/docs/test_map.py fails when the
map and the tree disagree; run ``.venv/bin/python engine/where_things_are.py`` to write it anew."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "samza_nb"
MAP = ROOT / "docs" / "map.md"
#: A module's line in the map stops here.
_LONGEST = 220

_HEADER = """# Where things are

Every package and module of `samza_nb`, with the first sentence of its docstring. Packages
import downward only (`tests/test_layers.py` holds the order). This page is written by
`engine/where_things_are.py` from the tree; `tests/docs/test_map.py` fails when it is stale.
`engine/message_walk.py` follows one message through a task epoch and counts the modules it
passes and the returns it makes between them.
"""


def first_sentence(path: Path) -> str:
    """The first sentence of a module's docstring, on one line."""
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(docstring.split("\n\n", 1)[0].split())
    match = re.match(r"(.+?\.)(\s|$)", paragraph)
    sentence = match.group(1) if match else paragraph
    return sentence if len(sentence) <= _LONGEST else sentence[: _LONGEST - 1].rstrip() + "…"


def _modules(package: Path) -> list[Path]:
    return sorted(p for p in package.glob("*.py") if p.name != "__init__.py")


def _subpackages(package: Path) -> list[Path]:
    return sorted(p for p in package.iterdir() if (p / "__init__.py").is_file())


def _section(package: Path) -> list[str]:
    dotted = ".".join(package.relative_to(ROOT).parts)
    lines = ["", f"## `{dotted}`", "", first_sentence(package / "__init__.py"), ""]
    modules = _modules(package)
    lines += [f"- `{module.name}`: {first_sentence(module)}" for module in modules]
    subpackages = _subpackages(package)
    if subpackages:
        if modules:
            lines.append("")
        lines += [f"- `{sub.name}/`: see `{dotted}.{sub.name}`" for sub in subpackages]
    for sub in subpackages:
        lines += _section(sub)
    return lines


def render() -> str:
    """The map as it should read for the tree as it is."""
    return _HEADER + "\n".join(_section(PACKAGE)).rstrip() + "\n"


def main() -> int:
    MAP.write_text(render())
    print(f"wrote {MAP.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
