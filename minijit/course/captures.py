"""Where the operands of control flow go: a program drawn with each operand of a `cond`,
`while` or `scan` led to the sub-jaxpr input it becomes (chapter 05, closure conversion).

`draw_jaxpr` draws an equation that holds sub-jaxprs as a box, and its operands arrive at the
box's edge. That hides what closure conversion is about: which input of which sub-jaxpr each
operand becomes, and that a value captured from outside arrives as a leading operand, level by
level. `draw_captures` draws the same layout (`layout_jaxpr`, painted by `paint`) and leads each
operand on to the inputs it becomes, by the primitive's operand layout:

- `cond`: the index stays at the box; every other operand goes to the same input of every
  branch (`branches[k]`);
- `while`: `cond_nconsts` captured values to `cond_jaxpr`, then `body_nconsts` to
  `body_jaxpr`, then the carry to both;
- `scan`: operand k to input k of its `jaxpr` (the `num_consts` captured values, the carry,
  then the scanned arrays, one slice per step);
- `jit`: operand k to input k.

A captured value is orange, and each input that receives one is drawn as a constvar is
(yellow, dashed): before closure conversion that is what it was. `cond` and `jit` do not
record which operands are captured, so their operand counts as captured when its value is
(a constvar, or the captured input of an enclosing body). Other equations keep `draw_jaxpr`'s
edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch

from minijit.course.draw import MARGIN, TITLE_IN, paint
from minijit.course.graph import FONT_PT, layout_jaxpr
from minijit.ir import ClosedJaxpr, Eqn, Jaxpr, Var

CAPTURED = "#dd6b20"  # orange: a value captured from outside, passed in as an operand
OPERAND = "#555555"  # the edges of `draw_jaxpr`

__all__ = ["Arrow", "draw_captures", "operand_arrows"]


@dataclass(frozen=True)
class Arrow:
    """An operand of the equation drawn as node `eqn`, from node `src` (where its value is
    defined) to the sub-jaxpr input node `dst` it becomes; `captured` if it is a captured
    value. Keys are those of `layout_jaxpr`."""

    src: str
    dst: str
    eqn: str
    captured: bool


def operand_arrows(closed: ClosedJaxpr | Jaxpr) -> list[Arrow]:
    """One `Arrow` per (operand, sub-jaxpr input it becomes), at every depth, outer first.
    Keys follow `layout_jaxpr`: `eqn3`, `eqn3/body_jaxpr/input0`, `eqn3/lit2` (a literal)."""
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    arrows: list[Arrow] = []
    _walk(jaxpr, "", arrows, captured=set())
    return arrows


def _targets(eqn: Eqn) -> list[tuple[int, str, int, bool | None]]:
    """(operand index, sub-jaxpr caption, input index, captured) for the primitives whose
    operand layout is known; captured is None where the equation does not say (`cond`)."""
    n, p = len(eqn.invars), eqn.params
    name = eqn.primitive.name
    if name == "cond":
        return [(k, f"branches[{b}]", k - 1, None)
                for b in range(len(p["branches"])) for k in range(1, n)]
    if name == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        out = [(k, "cond_jaxpr", k, True) for k in range(cn)]
        out += [(cn + k, "body_jaxpr", k, True) for k in range(bn)]
        for j, k in enumerate(range(cn + bn, n)):
            out += [(k, "cond_jaxpr", cn + j, False), (k, "body_jaxpr", bn + j, False)]
        return out
    if name == "scan":
        return [(k, "jaxpr", k, k < p["num_consts"]) for k in range(n)]
    if name == "jit":
        return [(k, "jaxpr", k, None) for k in range(n)]
    return []


def _subjaxprs(eqn: Eqn) -> list[tuple[str, Jaxpr]]:
    """(caption, jaxpr) as `layout_jaxpr` names them: the param, `[k]` for a tuple's k-th."""
    out = []
    for key in sorted(eqn.params):
        value = eqn.params[key]
        for k, item in enumerate(value if isinstance(value, tuple) else (value,)):
            sub = item.jaxpr if isinstance(item, ClosedJaxpr) else item
            if isinstance(sub, Jaxpr):
                out.append((f"{key}[{k}]" if isinstance(value, tuple) else key, sub))
    return out


def _walk(jaxpr: Jaxpr, prefix: str, arrows: list[Arrow], captured: set[str]) -> None:
    # `captured` holds the keys of the inputs that receive a captured value; an input is
    # marked before its sub-jaxpr is walked, so a `cond` inside a body sees its marks
    where = {id(v): f"{prefix}const{k}" for k, v in enumerate(jaxpr.constvars)}
    where.update((id(v), f"{prefix}input{k}") for k, v in enumerate(jaxpr.invars))
    for i, eqn in enumerate(jaxpr.eqns):
        key = f"{prefix}eqn{i}"
        for k, caption, j, role in _targets(eqn):
            a = eqn.invars[k]
            src = where.get(id(a)) if isinstance(a, Var) else f"{key}/lit{k}"
            if src is None:
                continue
            dst = f"{key}/{caption}/input{j}"
            # a constvar is a captured value too (an array the program closed over)
            is_captured = role if role is not None else (
                src in captured or src.rsplit("/", 1)[-1].startswith("const"))
            if is_captured:
                captured.add(dst)
            arrows.append(Arrow(src, dst, key, is_captured))
        for caption, sub in _subjaxprs(eqn):
            _walk(sub, f"{key}/{caption}/", arrows, captured)
        where.update((id(v), key) for v in eqn.outvars)


def draw_captures(closed: ClosedJaxpr | Jaxpr, *, title: str | None = None,
                  max_width: float = 16.0) -> Figure:
    """`draw_jaxpr`'s picture of `closed`, with the operands of `cond`, `while`, `scan` and
    `jit` led to the sub-jaxpr inputs they become, captured values in orange."""
    layout = layout_jaxpr(closed, max_width=max_width)
    arrows = operand_arrows(closed)
    led = {(a.src, a.eqn) for a in arrows}
    # an edge that stops at a box's edge is drawn again below, to where it goes inside
    layout.edges = [e for e in layout.edges if (e.src, e.dst) not in led]
    receives = {a.dst for a in arrows if a.captured}
    for node in layout.nodes:
        if node.key in receives:
            node.kind = "const"
    fig = plt.figure(figsize=(layout.width + 2 * MARGIN,
                              layout.height + 2 * MARGIN + (TITLE_IN if title else 0.0)))
    plt.close(fig)  # returned, not shown by pyplot: a notebook shows it once
    ax = fig.add_axes((0, 0, 1, 1))
    paint(layout, ax, title=title)
    by_key = {n.key: n for n in layout.nodes}
    for a in arrows:
        src, dst = by_key[a.src], by_key[a.dst]
        start = (src.x + (src.width if src.kind != "literal" else src.width / 2),
                 src.centre[1])
        ax.add_patch(FancyArrowPatch(
            start, (dst.x, dst.centre[1]), arrowstyle="-|>", mutation_scale=7,
            lw=1.3 if a.captured else 0.8, color=CAPTURED if a.captured else OPERAND,
            connectionstyle="arc3,rad=-0.08", shrinkA=1, shrinkB=1,
            # above the fill of the box it enters, below the text of boxes it crosses
            zorder=2 * (dst.depth - 1) + 0.5))
    ax.legend(handles=[Line2D([], [], color=CAPTURED, lw=1.3, label="a captured value"),
                       Line2D([], [], color=OPERAND, lw=0.8, label="an operand")],
              loc="lower right", fontsize=FONT_PT, frameon=False)
    return fig
