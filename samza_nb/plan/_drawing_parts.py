"""The parts a plan drawing is made of: sizes, colours, text helpers and the records
(:class:`_Node`, :class:`_Block`, :class:`_Edge`, :class:`_Layout`) that layout fills in and
plan/drawing.py renders."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape as _escape

from samza_nb.plan._text_width import text_width
from samza_nb.plan.operators import OpCode, OperatorSpec

_NODE_W = 140.0
_NODE_H = 36.0
_EXTRA_LINE_H = 13.0
_LAYER_GAP = 26.0
_ROW_GAP = 12.0
_LINE_GAP = 26.0
_PAD = 12.0
_TITLE_H = 18.0
_BAND_GAP = 48.0
_BLOCK_GAP = 26.0
_LABEL_H = 13.0
#: Between a node's text and its sides.
_TEXT_INSET = 8.0
_MARGIN = 14.0
_SPARK_W = 60.0
_FONT = "-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
#: The width the layout keeps to (a notebook cell is about 900 px wide): stages wrap their
#: operators into lines and bands wrap their blocks rather than grow wider.
MAX_WIDTH = 880.0
#: Text size in px at the drawing's natural size (it scales down only to fit a narrower box).
FONT_SIZE = 11

# Colours that read on JupyterLab's light and dark themes: nodes are a faint tint of their
# stroke colour over the theme's background, text and boxes take the theme's CSS variables
# (with light-theme fallbacks where the variables are not defined: a file, nbconvert, GitHub).
_TEXT = "var(--jp-content-font-color1,#24292f)"
_TEXT_MUTED = "var(--jp-content-font-color2,#57606a)"
_TEXT_COUNTER = "var(--jp-content-link-color,#0550ae)"
_TEXT_STREAM = "var(--jp-warn-color0,#9a4a0e)"
_STAGE_FILL = "var(--jp-layout-color2,#f6f8fa)"
_STAGE_STROKE = "var(--jp-border-color1,#afb8c1)"
_TINT = "0.16"

_OP_COLOURS = {
    "io": "#6e7781",
    "shuffle": "#c9661f",
    "stateful": "#8250df",
    "stateless": "#3b7dd8",
}
_STREAM_COLOURS = {"input": "#2da44e", "side_input": "#2da44e", "output": "#bf8700"}
_TABLE_COLOUR = "#8250df"
_STAGE_COLOUR = "#3b7dd8"
_EDGE_COLOURS = {"intermediate": "#c9661f", "table": "#8250df"}
_EDGE_DEFAULT = "#8c959f"
_ATTRIBUTE = re.compile(r"^[a-z][a-z-]*$")


def _category(opcode: OpCode) -> str:
    if opcode in (OpCode.PARTITION_BY, OpCode.BROADCAST):
        return "shuffle"
    if opcode in (OpCode.WINDOW, OpCode.JOIN):
        return "stateful"
    if opcode in (OpCode.INPUT, OpCode.SEND_TO):
        return "io"
    return "stateless"


def escape(text: str) -> str:
    """Text content for SVG/HTML (xml.sax.saxutils would import urllib: 60 ms at start-up)."""
    return _escape(text, quote=False)


def quoteattr(text: str) -> str:
    """A double-quoted, escaped attribute value."""
    return f'"{_escape(text, quote=True)}"'


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _text_w(text: str, *, bold: bool = False) -> float:
    """The drawn width of one line of text in px (see _text_width.py)."""
    return text_width(text, FONT_SIZE, bold=bold)


def _lines_w(lines: list[str]) -> float:
    """The width a node needs for its lines (the first in bold), insets included."""
    widest = max((_text_w(line, bold=i == 0) for i, line in enumerate(lines)), default=0.0)
    return widest + 2 * _TEXT_INSET


def _partitions(count: int) -> str:
    return f"{count} partition" if count == 1 else f"{count} partitions"


def _suffix(spec: OperatorSpec) -> str:
    """The user id or counter of an op id (``by-page`` of ``app-1-partition_by-by-page``)."""
    marker = f"-{spec.opcode.value}-"
    index = spec.op_id.rfind(marker)
    return spec.op_id[index + len(marker) :] if index >= 0 else spec.op_id


@dataclass(eq=False)
class _Node:
    key: str
    lines: list[str]
    title: str
    classes: str
    data: dict[str, str]
    fill: str
    stroke: str
    w: float = _NODE_W
    h: float = _NODE_H
    x: float = 0.0
    y: float = 0.0
    block: _Block | None = None

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass(eq=False)
class _Block:
    key: str
    kind: str  # "stage", "stream", "table"
    order: int
    nodes: list[_Node] = field(default_factory=list)
    w: float = _NODE_W
    h: float = _NODE_H
    x: float = 0.0
    y: float = 0.0
    column: int = 0
    title: str = ""
    #: Where the edges leaving the block turn towards their targets: below its line of
    #: blocks and below the stream labels under that line.
    exit_y: float = 0.0
    #: Where a stage's title starts, from the block's left: right of the edges coming in.
    title_x: float = _PAD
    data: dict[str, str] = field(default_factory=dict)

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass(eq=False)
class _Edge:
    src: _Node
    dst: _Node
    kind: str  # "op", "input", "intermediate", "output", "table", "side_input"
    stream: str | None = None
    table: str | None = None
    label: str | None = None
    #: The label's box (left, top, right, bottom), set by the layout.
    label_box: tuple[float, float, float, float] | None = None
    #: The x of the lane right of the blocks that an edge passing other lines of blocks
    #: runs down (set by the layout); None for an edge to the next line.
    lane: float | None = None
    #: The x of the gap beside its source that an edge leaving a stage runs down when
    #: another operator sits below its source (set by the layout); None: from its bottom.
    side_x: float | None = None


@dataclass
class _Layout:
    blocks: list[_Block]
    nodes: dict[str, _Node]
    edges: list[_Edge]
    width: float
    height: float
