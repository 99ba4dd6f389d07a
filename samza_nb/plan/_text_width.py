"""The width text takes in a plan drawing, measured from Helvetica/Arial's glyph widths (the
drawing's font stack falls back to them or to their metric twins, Liberation Sans and Nimbus
Sans), with a margin for the wider system fonts at the front of the stack (plan/drawing.py)."""

from __future__ import annotations

# Advance widths in thousandths of an em (Helvetica's AFM), printable ASCII from " " on.
_ASCII = (
    "278 278 355 556 556 889 667 191 333 333 389 584 278 333 278 278 "  # space to /
    "556 556 556 556 556 556 556 556 556 556 278 278 584 584 584 556 "  # 0 to ?
    "1015 667 667 722 722 667 611 778 722 278 500 667 556 833 722 778 "  # @ to O
    "667 778 722 667 611 722 667 944 667 667 611 278 278 278 469 556 "  # P to _
    "333 556 556 500 556 556 278 556 556 222 222 500 222 833 556 556 "  # ` to o
    "556 556 333 500 278 556 500 722 500 500 500 334 260 334 584"  # p to ~
)
_WIDTHS = {chr(32 + i): int(w) for i, w in enumerate(_ASCII.split())}
_WIDTHS.update({"·": 278, "–": 556, "—": 1000, "…": 1000, "°": 400, "µ": 556})
#: Arrows, the join sign and any other character: as wide as the font's widest glyphs.
_OTHER = 1000
#: Bold text is about 8% wider; system fonts (San Francisco, Segoe UI) about 6% wider.
_BOLD = 1.08
_SLACK = 1.08


def text_width(text: str, font_size: float, *, bold: bool = False) -> float:
    """The width in px of ``text`` at ``font_size`` px, never less than a browser draws it."""
    units = sum(_WIDTHS.get(char, _OTHER) for char in text)
    return units / 1000 * font_size * _SLACK * (_BOLD if bold else 1.0)
