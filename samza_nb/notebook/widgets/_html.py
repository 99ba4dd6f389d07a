"""Small formatting helpers shared by the widgets: numbers, HTML tables and text tables.

The HTML is self-contained (inline styles, no CSS classes a notebook theme must provide) because
it is also the static snapshot that papermill and nbconvert keep in the saved notebook. Colours
are JupyterLab's theme variables with light-theme fallbacks, so text and table headers read on
the dark theme too (never dark text on a dark cell, nor white on white).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

__all__ = [
    "ERROR",
    "FONT",
    "TEXT",
    "compact",
    "count",
    "html_table",
    "paragraph",
    "rate",
    "text_table",
]

FONT = "-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
#: Body text: the theme's content colour.
TEXT = "var(--jp-content-font-color1,#24292f)"
#: Errors: the theme's error colour.
ERROR = "var(--jp-error-color1,#cf222e)"

_TABLE_STYLE = f"border-collapse:collapse;font-size:12px;margin:4px 0 8px;color:{TEXT}"
_CELL_STYLE = (
    "border:1px solid var(--jp-border-color2,#d0d7de);padding:2px 8px;text-align:left;"
    f"vertical-align:top;color:{TEXT}"
)
_HEAD_STYLE = _CELL_STYLE + ";background:var(--jp-layout-color2,#f6f8fa);font-weight:600"


def count(value: int | None) -> str:
    """An exact count with thousands separators, or an en dash when there is none."""
    return "–" if value is None else f"{value:,}"


def compact(value: int) -> str:
    """A short count for the drawing, where a node line holds about twenty characters."""
    for limit, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(value) >= limit:
            text = f"{value / limit:.1f}".removesuffix(".0")
            return text + suffix
    return str(value)


def rate(value: float | None) -> str:
    """Messages per second, or an en dash when there is no rate yet."""
    return "–" if value is None else f"{value:,.1f}/s"


def paragraph(text: str, *, colour: str = TEXT, bold: bool = False) -> str:
    """One escaped line of text in the widgets' font."""
    weight = ";font-weight:600" if bold else ""
    return (
        f'<div style="font-family:{FONT};font-size:12px;margin:2px 0;color:{colour}{weight}">'
        f"{escape(text)}</div>"
    )


def html_table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, caption: str = "") -> str:
    """An HTML table of escaped text cells (an empty table still shows its headers)."""
    head = "".join(f'<th style="{_HEAD_STYLE}">{escape(header)}</th>' for header in headers)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL_STYLE}">{escape(cell)}</td>' for cell in row) + "</tr>"
        for row in rows
    )
    title = (
        f'<caption style="text-align:left;font-weight:600;padding:2px 0">{escape(caption)}</caption>'
        if caption
        else ""
    )
    return (
        f'<table style="{_TABLE_STYLE};font-family:{FONT}">{title}<thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def text_table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, indent: str = "  ") -> str:
    """The same table as aligned plain text, for terminals and papermill logs."""
    materialised = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(row[i]) for row in materialised) for i in range(len(headers))]
    return "\n".join(
        indent
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in materialised
    )
