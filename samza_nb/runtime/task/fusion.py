"""Chains of stateless operators compiled into one function per task epoch.

A map, filter, flat_map or sink is a few lines of Python: its *step*. When each operator of a
chain hands every message to exactly one next operator (and that operator has no other
upstream), the chain's steps are written one after another into one generated function, so a
message passes the whole chain in one frame instead of one call per operator. The chain's last
operator hands its output to the next receiver (a window, a join, a stream writer, or several
operators at a fan-out). An operator that ``job.show`` samples (``tapped``) starts a chain of
its own, so its sampling wrapper sees every message it receives.

Every step keeps the closures' semantics (runtime/task/stateless.py): the user function alone inside
its ``try``; a failure goes to the operator's ``failed`` (skip and count, or raise
UserFunctionError naming it); a map or flat_map returning None drops the message and counts it
in ``dropped``; a flat_map's results are collected inside its ``try`` (a generator that raises
half-way, or a result that is no iterable, is the operator's failure, and a skipped message
emits none of its results); every operator counts the messages it received. Messages still go
through the chain one at a time and in order.

Two entries come out of one compiled chain:
  - ``receive(message)``: one message (the per-message read path, window panes, joins);
  - ``run(messages)``: a decoded batch in one call, the chain looping inside it with its
    counters in local variables. After a failure, ``entered()`` says how many messages of the
    batch had entered the chain, so the task names the failing message's offset.

The generated source depends only on the sequence of step kinds, so it is compiled once per
shape and process; each task epoch only binds its operators' functions to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import length_hint
from typing import Any, Protocol

__all__ = ["CompiledChain", "chain_from", "compile_chain", "one_by_one"]

Receiver = Callable[[Any], None]


class ChainableOperator(Protocol):
    """What fusion needs from an operator implementation (runtime/task/operators.py)."""

    step: str | None
    dropped: int
    tapped: bool

    @property
    def next_ops(self) -> Sequence[Any]: ...

    @property
    def prev_ops(self) -> Sequence[Any]: ...

    def step_function(self) -> Callable[[Any], Any]: ...

    def failed(self, error: Exception) -> Any: ...


class CompiledChain:
    """The entries of one compiled chain, and its operators' message counts."""

    def __init__(
        self,
        receive: Receiver,
        run: Callable[[Sequence[Any]], None],
        entered: Callable[[], int],
        counts: Callable[[], tuple[int, ...]],
    ) -> None:
        self.receive = receive
        self.run = run
        self.entered = entered
        self._counts = counts

    def counter(self, position: int) -> Callable[[], int]:
        """How many messages the chain's ``position``-th operator received so far."""
        counts = self._counts
        return lambda: counts()[position]


def chain_from(head: ChainableOperator) -> list[ChainableOperator]:
    """``head`` and the operators after it that can be written into the same function."""
    chain = [head]
    current = head
    while current.step != "sink" and len(current.next_ops) == 1:
        following = current.next_ops[0]
        if getattr(following, "step", None) is None or following.tapped or len(following.prev_ops) != 1:
            break
        chain.append(following)
        current = following
    return chain


def compile_chain(chain: Sequence[ChainableOperator], emit: Receiver | None) -> CompiledChain:
    """Bind ``chain``'s operators to the compiled function of its shape; ``emit`` receives the
    last operator's output (None when nothing does)."""
    steps = tuple(str(op.step) for op in chain)
    if any(step not in _STEPS for step in steps):
        msg = f"cannot compile a chain with steps {steps}: known steps are {sorted(_STEPS)}"
        raise ValueError(msg)
    shape = (steps, emit is not None)
    build = _builders.get(shape)
    if build is None:
        build = _builders[shape] = _compile(*shape)
    arguments: list[Any] = []
    for op in chain:
        arguments += [op.step_function(), op.failed, op]
    receive, run, entered, counts = build(*arguments, emit)
    return CompiledChain(receive, run, entered, counts)


# Each step: lines with {fn}, {failed}, {impl} (the operator), {count}, {message} (its input),
# {out} (its output) and {exit} (what skips the rest of the chain for this message).
_MAP = """\
{count} += 1
try:
    {out} = {fn}({message})
except Exception as error:
    {failed}(error)
    {exit}
if {out} is None:
    {impl}.dropped += 1
    {exit}"""

_FILTER = """\
{count} += 1
try:
    keep = {fn}({message})
except Exception as error:
    {failed}(error)
    {exit}
if not keep:
    {exit}"""

_FLAT_MAP = """\
{count} += 1
try:
    results_{k} = {fn}({message})
    if results_{k} is not None and type(results_{k}) is not list and type(results_{k}) is not tuple:
        results_{k} = list(results_{k})
except Exception as error:
    {failed}(error)
    {exit}
if results_{k} is None:
    {impl}.dropped += 1
    {exit}
for {out} in results_{k}:"""

_SINK = """\
{count} += 1
try:
    {fn}({message})
except Exception as error:
    {failed}(error)"""

#: Each step's lines and whether its output is the input (filter) or a new value.
_STEPS: dict[str, tuple[str, bool]] = {
    "map": (_MAP, False),
    "filter": (_FILTER, True),
    "flat_map": (_FLAT_MAP, False),
    "sink": (_SINK, True),
}

_builders: dict[tuple[tuple[str, ...], bool], Callable[..., Any]] = {}


def _body(steps: tuple[str, ...], emits: bool, counter: str, top_exit: str) -> list[str]:
    """The chain's steps as lines, indented from 0, for one entering message ``message_0``."""
    lines: list[str] = []
    depth = 0
    exit_ = top_exit
    message = "message_0"
    for k, step in enumerate(steps):
        template, passes_input = _STEPS[step]
        out = message if passes_input else f"message_{k + 1}"
        text = template.format(
            fn=f"fn_{k}",
            failed=f"failed_{k}",
            impl=f"impl_{k}",
            count=f"{counter}_{k}",
            message=message,
            out=out,
            exit=exit_,
            k=k,
        )
        lines += ["    " * depth + line for line in text.splitlines()]
        if step == "flat_map":
            depth += 1
            exit_ = "continue"
        message = out
    if emits:
        lines.append("    " * depth + f"emit({message})")
    return lines


def _compile(steps: tuple[str, ...], emits: bool) -> Callable[..., Any]:
    size = len(steps)
    parameters = ", ".join(f"fn_{k}, failed_{k}, impl_{k}" for k in range(size))
    counts = ", ".join(f"count_{k}" for k in range(size))

    def indented(lines: list[str], depth: int) -> list[str]:
        return ["    " * depth + line for line in lines]

    source = [
        f"def build({parameters}, emit):",
        *(f"    count_{k} = 0" for k in range(size)),
        "    last_entered = 0",
        "",
        "    def receive(message_0):",
        f"        nonlocal {counts}",
        *indented(_body(steps, emits, "count", "return"), 2),
        "",
        "    def run(messages):",
        f"        nonlocal {counts}, last_entered",
        f"        {' = '.join(f'seen_{k}' for k in range(size))} = 0",
        "        try:",
        "            for message_0 in messages:",
        *indented(_body(steps, emits, "seen", "continue"), 4),
        "        finally:",
        *(f"            count_{k} += seen_{k}" for k in range(size)),
        "            last_entered = seen_0",
        "",
        "    def entered():",
        "        return last_entered",
        "",
        "    def counts():",
        f"        return ({counts},)",
        "",
        "    return receive, run, entered, counts",
    ]
    namespace: dict[str, Any] = {}
    code = compile("\n".join(source) + "\n", f"<samza_nb chain {'-'.join(steps)}>", "exec")
    exec(code, namespace)  # noqa: S102 - the source is built above from fixed templates only
    build: Callable[..., Any] = namespace["build"]
    return build


def one_by_one(push: Callable[[Any], None]) -> tuple[Callable[[list[Any]], None], Callable[[], int]]:
    """A batch pushed message by message (an input without a compiled chain after it), with
    how many messages of the last batch were pushed, as a compiled chain's ``run`` and
    ``entered``."""
    pushed = 0

    def run(messages: list[Any]) -> None:
        # How many were pushed is worked out from what the iterator has left (a failing
        # message counts as pushed), not counted per message.
        nonlocal pushed
        remaining = iter(messages)
        try:
            for message in remaining:
                push(message)
        finally:
            pushed = len(messages) - length_hint(remaining)

    return run, lambda: pushed
