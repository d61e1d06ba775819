"""Dead code, shown: the backward walk that dead code elimination makes, one equation at a
time, and a picture of a program with the equations it drops greyed out (chapter 07,
section 5).

The walk is the rule chapter 07 teaches: the outputs start live; the equations are visited
from the last to the first; an equation is kept if it writes a live value or has an effect
(`debug.print`), and then its inputs become live; any other equation is dropped. In a jaxpr
every value is defined before it is read, so when the walk reaches an equation, every
equation that could read its outputs has been decided already: one walk suffices.

These functions only *show* that walk, as a table and as a picture; they build no program.
The pass is `minijit.passes.dce`, and the learner writes one of their own in exercise
`ex07_dce`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from minijit.course.draw import MARGIN, TITLE_IN, paint
from minijit.course.graph import Layout, layout_jaxpr
from minijit.course.graph import _subjaxprs as captioned_subjaxprs
from minijit.ir import (
    ClosedJaxpr,
    Eqn,
    Jaxpr,
    Var,
    VarNames,
    name_like_the_printer,
    pp_eqn,
    subjaxprs,
)
from minijit.passes.rewrite import has_effects

DEAD_FACE = "#f2f2f2"  # the veil over a dropped equation, and its border
DEAD_EDGE = "#c4c4c4"
LONGEST_EQN = 72  # a longer equation, or one holding sub-jaxprs, is shown without its params


@dataclass(frozen=True)
class Step:
    """One equation, as the backward walk decides it. Names are the printer's (`print(closed)`
    shows the same ones); `live` holds the live values once this equation is decided, in the
    order the printer names them."""

    text: str  # the equation as printed
    live_outputs: tuple[str, ...]  # the outputs it writes that are live when it is reached
    effect: bool
    kept: bool
    live: tuple[str, ...]


def backward_walk(closed: ClosedJaxpr | Jaxpr) -> tuple[tuple[str, ...], list[Step]]:
    """(the live values at the start: the outputs, the steps from the last equation to the
    first) on the top level of `closed`. Only the top level: an equation that holds
    sub-jaxprs is one step, with an effect if anything inside it has one."""
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    names = VarNames()
    name_like_the_printer(jaxpr, names)
    names.dropped |= _unread(jaxpr)  # as the printer, which writes them `_`
    order = {name: k for k, name in enumerate(names.names.values())}

    def named(ids) -> tuple[str, ...]:
        return tuple(sorted((names.names[i] for i in ids), key=order.__getitem__))

    live = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    start = named(live)
    steps = []
    for eqn in reversed(jaxpr.eqns):
        live_outputs = [id(v) for v in eqn.outvars if id(v) in live]
        effect = has_effects(eqn)
        kept = bool(live_outputs) or effect
        if kept:
            live.update(id(a) for a in eqn.invars if isinstance(a, Var))
        steps.append(Step(_short_text(eqn, names), named(live_outputs), effect, kept,
                          named(live)))
    return start, steps


def walk_table(closed: ClosedJaxpr | Jaxpr) -> str:
    """`backward_walk` as a text table: one row per equation, last equation first."""
    start, steps = backward_walk(closed)
    texts = [s.text for s in steps]
    width = max([len("equation (from the last)"), *map(len, texts)])
    rows = [f"live at the start (the outputs): {' '.join(start)}", "",
            f"{'step':>4}  {'equation (from the last)':<{width}}  {'writes live':<11}  "
            f"{'effect':<6}  {'decision':<8}  live afterwards"]
    for k, (step, text) in enumerate(zip(steps, texts), 1):
        rows.append(f"{k:>4}  {text:<{width}}  {' '.join(step.live_outputs) or '-':<11}  "
                    f"{'yes' if step.effect else '-':<6}  {'keep' if step.kept else 'drop':<8}  "
                    f"{' '.join(step.live)}")
    return "\n".join(rows)


def _unread(jaxpr: Jaxpr) -> set[int]:
    """ids of the outputs no equation or output reads, in `jaxpr` and its sub-jaxprs."""
    read = {id(a) for e in jaxpr.eqns for a in e.invars} | {id(a) for a in jaxpr.outvars}
    unread = {id(v) for e in jaxpr.eqns for v in e.outvars if id(v) not in read}
    for eqn in jaxpr.eqns:
        for sub in subjaxprs(eqn):
            unread |= _unread(sub)
    return unread


def _short_text(eqn: Eqn, names: VarNames) -> str:
    """The equation as printed, on one line; its params written `[…]` if it holds sub-jaxprs
    or is longer than `LONGEST_EQN` (the printed program shows them)."""
    text = " ".join(pp_eqn(eqn, names).split())
    if not subjaxprs(eqn) and len(text) <= LONGEST_EQN:
        return text
    bare = " ".join(pp_eqn(replace(eqn, params={}), names).split())
    name = eqn.primitive.name
    if eqn.outvars:
        return bare.replace(f" = {name}", f" = {name}[…]", 1)
    return f"{name}[…]{bare[len(name):]}"


def dead_keys(closed: ClosedJaxpr | Jaxpr) -> set[str]:
    """The keys (`layout_jaxpr`'s: `eqn3`, `eqn3/body_jaxpr/eqn0`) of the equations the walk
    drops: at the top level from the outputs, and inside every kept equation's sub-jaxprs
    from all of their outputs (minijit's `dce` also drops the unused outputs of a `cond` or
    a `scan`, and the work that computed them: this picture keeps them)."""
    dead: set[str] = set()

    def walk(jaxpr: Jaxpr, prefix: str) -> None:
        live = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
        for i in reversed(range(len(jaxpr.eqns))):
            eqn, key = jaxpr.eqns[i], f"{prefix}eqn{i}"
            if not has_effects(eqn) and not any(id(v) in live for v in eqn.outvars):
                dead.add(key)
                continue
            live.update(id(a) for a in eqn.invars if isinstance(a, Var))
            for caption, sub in captioned_subjaxprs(eqn):
                walk(sub, f"{key}/{caption}/")

    walk(closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed, "")
    return dead


def draw_dead_code(closed: ClosedJaxpr | Jaxpr, *, title: str | None = None,
                   max_width: float = 11.0) -> Figure:
    """`draw_jaxpr`'s picture of `closed`, with the equations the walk drops (`dead_keys`)
    and their literals greyed out, and the arrows into them faded and dashed: the values
    they read are not needed on their account. Everything else is drawn as `draw_jaxpr`
    draws it."""
    layout = layout_jaxpr(closed, max_width=max_width)
    dead = dead_keys(closed)

    def is_dead(key: str) -> bool:
        return any(key == d or key.startswith(d + "/") for d in dead)

    faded = [e for e in layout.edges if e.kind == "data" and is_dead(e.dst)]
    kept = Layout(nodes=layout.nodes, edges=[e for e in layout.edges if e not in faded],
                  width=layout.width, height=layout.height, groups=layout.groups)
    height = layout.height + 2 * MARGIN + (TITLE_IN if title else 0.0)
    fig = plt.figure(figsize=(layout.width + 2 * MARGIN, height))
    plt.close(fig)  # returned, not shown by pyplot: a notebook shows it once
    ax = fig.add_axes((0, 0, 1, 1))
    paint(kept, ax, title=title)  # one data unit per inch: the axes fill the figure
    by_key = {n.key: n for n in layout.nodes}
    for edge in faded:
        src, dst = by_key[edge.src], by_key[edge.dst]
        start, end = (src.x + src.width, src.centre[1]), (dst.x, dst.centre[1])
        bend = 0.15 if end[0] - start[0] > 1.5 else 0.0  # as `paint` bends a long edge
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=7, lw=0.8,
                                     color=DEAD_EDGE, linestyle="--",
                                     connectionstyle=f"arc3,rad={bend}", shrinkA=1, shrinkB=1,
                                     zorder=1))
    for node in layout.nodes:  # a veil over each dropped box and its literals
        if node.key in dead or (node.kind == "literal" and is_dead(node.key)):
            ax.add_patch(FancyBboxPatch((node.x, node.y), node.width, node.height,
                                        boxstyle="round,pad=0.02,rounding_size=0.04",
                                        facecolor=DEAD_FACE, alpha=0.75, edgecolor=DEAD_EDGE,
                                        linestyle="--", linewidth=0.9, zorder=100))
    return fig
