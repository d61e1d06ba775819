"""Pictures of programs with matplotlib: a jaxpr as a dataflow graph, fusion before and after,
and the pipeline that `jit` runs (chapter 07).

Each function returns a matplotlib `Figure` (closed in pyplot, so a notebook shows it once,
as the value of the cell) or draws into the `ax` it is given. The positions come from
`minijit.course.graph.layout_jaxpr`, in inches, and the text is drawn at a fixed size.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from minijit.course.graph import FONT_PT, LINE_IN, Layout, Node, layout_jaxpr
from minijit.ir import ClosedJaxpr, Jaxpr
from minijit.passes import PIPELINE

MARGIN = 0.25  # inches around a drawing
TITLE_IN = 0.3

# Fills and borders by kind of node; fusion groups are coloured by `group_colour`.
STYLE = {
    "input": {"facecolor": "#dbe9f6", "edgecolor": "#2b6cb0", "linestyle": "-"},
    "const": {"facecolor": "#fdf1c7", "edgecolor": "#b7791f", "linestyle": "--"},
    "eqn": {"facecolor": "white", "edgecolor": "#444444", "linestyle": "-"},
    "nested": {"facecolor": "#f4f4f4", "edgecolor": "#777777", "linestyle": "-"},
    "output": {"facecolor": "#dcf2dc", "edgecolor": "#2f855a", "linestyle": "-"},
}
# tab10 without its grey (grey is for boxes that are not kernels)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf")


def group_colour(group: int) -> str:
    """A colour per fusion group: the palette first, then hues spaced by the golden ratio."""
    if group < len(PALETTE):
        return PALETTE[group]
    r, g, b = colorsys.hsv_to_rgb((group * 0.618033988749895) % 1.0, 0.65, 0.85)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def draw_jaxpr(closed: ClosedJaxpr | Jaxpr, ax: Axes | None = None, *, title: str | None = None,
               nested: bool = True, max_width: float = 11.0,
               colour_like: ClosedJaxpr | Jaxpr | None = None) -> Figure:
    """Draw a program as a dataflow graph, left to right by depth.

    Blue boxes are inputs, yellow dashed ones constvars, grey numbers literals, green boxes
    outputs. Each `fused` kernel is a box in its group's colour with its equations inside;
    `colour_like=fused_program` colours the equations of an unfused program by the kernel
    they join there. Other arguments as `layout_jaxpr`.
    """
    layout = layout_jaxpr(closed, nested=nested, max_width=max_width, colour_like=colour_like)
    if ax is not None:
        paint(layout, ax, title=title)
        return ax.figure
    fig, (ax,) = _figure([layout], [title])
    paint(layout, ax, title=title)
    return fig


def draw_fusion(before: ClosedJaxpr | Jaxpr, after: ClosedJaxpr | Jaxpr, *,
                titles: Sequence[str] = ("before fusion", "after fuse_elementwise"),
                max_width: float = 11.0) -> Figure:
    """A program before and after fusion, one above the other: in `before`, every equation
    that fusion puts into a kernel has that kernel's colour in `after`."""
    layouts = [layout_jaxpr(before, max_width=max_width, colour_like=after),
               layout_jaxpr(after, max_width=max_width)]
    fig, axes = _figure(layouts, titles)
    for layout, ax, title in zip(layouts, axes, titles):
        paint(layout, ax, title=title)
    return fig


def paint(layout: Layout, ax: Axes, *, title: str | None = None) -> None:
    """Draw `layout` into `ax`, one data unit per inch (`_figure` makes axes that way)."""
    ax.set_axis_off()
    ax.set_xlim(-MARGIN, layout.width + MARGIN)
    ax.set_ylim(layout.height + MARGIN, -MARGIN - (TITLE_IN if title else 0.0))
    if title:
        ax.text(0, -MARGIN - TITLE_IN / 2, title, fontsize=FONT_PT + 2, fontweight="bold",
                va="center", ha="left")
    by_key = {n.key: n for n in layout.nodes}
    for node in sorted(layout.nodes, key=lambda n: n.depth):  # outer boxes first, below
        _paint_node(node, ax)
    stubs_out: set[tuple[str, str]] = set()  # one stub per value leaving a band
    stubs_in: dict[str, int] = {}  # how many stubs already come into a box
    wrapped_in: dict[str, int] = {}
    for edge in layout.edges:
        if edge.kind == "wrapped":
            wrapped_in[edge.dst] = wrapped_in.get(edge.dst, 0) + 1
    for edge in layout.edges:
        src, dst = by_key[edge.src], by_key[edge.dst]
        depth = max(src.depth, dst.depth) * 2 + 1
        if edge.kind == "wrapped":  # to a later band: a stub on each side, named
            stubs = []
            if (edge.src, edge.name) not in stubs_out:
                stubs_out.add((edge.src, edge.name))
                sx, sy = src.x + src.width, src.y + src.height / 2
                stubs.append(((sx, sx + 0.3, sy), f"{edge.name} ↓"))
            k = stubs_in[edge.dst] = stubs_in.get(edge.dst, -1) + 1
            # the stubs into one box share its left side, top to bottom
            dx, dy = dst.x, dst.y + dst.height * (k + 1) / (wrapped_in[edge.dst] + 1)
            stubs.append(((dx - 0.3, dx, dy), f"↓ {edge.name}"))
            for (x0, x1, y), text in stubs:
                ax.add_patch(FancyArrowPatch((x0, y), (x1, y), arrowstyle="-|>",
                                             mutation_scale=7, color="#999999", lw=0.8,
                                             linestyle=":", zorder=depth))
                ax.text((x0 + x1) / 2, y - 0.06, text, fontsize=FONT_PT - 1.5, ha="center",
                        va="bottom", color="#777777", family="monospace", zorder=depth)
            continue
        start, end = (src.x + src.width, src.centre[1]), (dst.x, dst.centre[1])
        bend = 0.15 if end[0] - start[0] > 1.5 else 0.0  # a long edge arcs over the boxes
        ax.add_patch(FancyArrowPatch(
            start, end, arrowstyle="-|>", mutation_scale=7, lw=0.8,
            color="#999999" if edge.kind == "literal" else "#555555",
            linestyle=":" if edge.kind == "literal" else "-",
            connectionstyle=f"arc3,rad={bend}", shrinkA=3 if edge.kind == "literal" else 1,
            shrinkB=1, zorder=depth))


def _paint_node(node: Node, ax: Axes) -> None:
    z = node.depth * 2
    if node.kind == "literal":
        ax.text(node.x + node.width / 2, node.y + node.height / 2, node.label, color="#666666",
                fontsize=FONT_PT - 1, family="monospace", style="italic", ha="center",
                va="center", zorder=z + 1)
        return
    if node.kind == "caption":
        ax.text(node.x, node.y + node.height / 2, node.label, color="#555555",
                fontsize=FONT_PT - 0.5, family="monospace", ha="left", va="center", zorder=z + 1)
        return
    style = dict(STYLE["nested" if node.nested else node.kind])
    if node.group is not None:
        colour = group_colour(node.group)
        style = {"facecolor": colour + ("22" if node.nested else "55"), "edgecolor": colour,
                 "linestyle": "-"}
    ax.add_patch(FancyBboxPatch((node.x, node.y), node.width, node.height,
                                boxstyle="round,pad=0,rounding_size=0.04",
                                linewidth=1.6 if node.group is not None else 0.9, zorder=z,
                                **style))
    lines = node.label.split("\n")
    if node.nested:  # the header: on the top lines of the box, above what is inside
        ax.text(node.x + 0.07, node.y + 0.05, node.label, fontsize=FONT_PT, family="monospace",
                ha="left", va="top", zorder=z + 1, linespacing=1.1)
    else:
        ax.text(node.x + node.width / 2, node.y + node.height / 2, node.label,
                fontsize=FONT_PT, family="monospace", ha="center", va="center", zorder=z + 1,
                linespacing=1.1 if len(lines) > 1 else 1.0)


def _figure(layouts: Sequence[Layout], titles: Sequence[str | None]) -> tuple[Figure, list]:
    """A figure with one axes per layout, stacked, at one data unit per inch."""
    width = max(layout.width for layout in layouts) + 2 * MARGIN
    heights = [layout.height + 2 * MARGIN + (TITLE_IN if title else 0.0)
               for layout, title in zip(layouts, titles)]
    fig = plt.figure(figsize=(width, sum(heights)))
    plt.close(fig)  # returned, not shown by pyplot: a notebook shows it once
    axes, top = [], sum(heights)
    for layout, h in zip(layouts, heights):
        top -= h
        w = layout.width + 2 * MARGIN
        axes.append(fig.add_axes((0, top / sum(heights), w / width, h / sum(heights))))
    return fig, axes


# --------------------------------------------------------------------------- the pipeline


def pipeline_stages(passes: Sequence = PIPELINE) -> list[tuple[str, str]]:
    """(stage, what it is) in the order `mj.jit` runs them, the passes by their names."""
    return [("Python function", "f(x)"), ("trace", "make_jaxpr"), ("jaxpr", "ClosedJaxpr"),
            *[(getattr(p, "__name__", repr(p)), "pass") for p in passes],
            ("codegen", "lower: Python source"), ("Numba", "numba.njit")]


def draw_pipeline(passes: Sequence = PIPELINE, *, highlight: Sequence[str] = ()) -> Figure:
    """The pipeline `mj.jit` runs on a cache miss, drawn from `passes` (default: the real
    `minijit.passes.PIPELINE`, so the picture cannot fall behind it): the stages left to
    right, the passes top to bottom in their frame. The passes and stages (`trace`, `codegen`,
    ...: the names `pipeline_stages` gives) named in `highlight` are filled."""
    stages = pipeline_stages(passes)
    before = stages[:3]
    pass_names = [name for name, what in stages if what == "pass"]
    after = stages[3 + len(pass_names):]
    char, gap, frame_pad = 0.6 * FONT_PT / 72, 0.4, 0.12
    box_h = 2 * LINE_IN + 0.12
    pass_w = max(map(len, pass_names), default=4) * char + 0.2
    pass_h, pass_gap = LINE_IN + 0.12, 0.16
    column_h = len(pass_names) * pass_h + max(len(pass_names) - 1, 0) * pass_gap
    height = max(box_h, column_h + 2 * frame_pad) + 0.3  # room for the frame's title
    mid = 0.3 + (height - 0.3) / 2

    def width_of(stage):
        return max(len(stage[0]), len(stage[1])) * char + 0.2

    total = (sum(map(width_of, before + after)) + pass_w + 2 * frame_pad
             + gap * (len(before) + len(after)))
    fig = plt.figure(figsize=(total + 2 * MARGIN, height + 2 * MARGIN))
    plt.close(fig)  # returned, not shown by pyplot: a notebook shows it once
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set_xlim(-MARGIN, total + MARGIN)
    ax.set_ylim(height + MARGIN, -MARGIN)

    def box(x, y, w, h, text, face):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.05",
                                    facecolor=face, edgecolor="#444444", lw=0.9, zorder=2))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=FONT_PT,
                family="monospace", zorder=3, linespacing=1.2)

    def face_of(stage):  # the stages outside the frame: blue, or filled as the passes are
        return "#fde2c4" if stage in highlight else "#dbe9f6"

    def arrow(start, end):
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=8,
                                     color="#555555", zorder=1, shrinkA=0, shrinkB=0))

    x = 0.0
    for stage in before:
        w = width_of(stage)
        box(x, mid - box_h / 2, w, box_h, "\n".join(stage), face_of(stage[0]))
        arrow((x + w, mid), (x + w + gap, mid))
        x += w + gap
    frame_w = pass_w + 2 * frame_pad
    ax.add_patch(FancyBboxPatch((x, 0.3), frame_w, height - 0.3,
                                boxstyle="round,pad=0,rounding_size=0.06", facecolor="none",
                                edgecolor="#b7791f", linestyle="--", zorder=1))
    ax.text(x, 0.22, "minijit.passes.PIPELINE", ha="left", va="bottom",
            fontsize=FONT_PT + 0.5, color="#b7791f", family="monospace")
    y = mid - column_h / 2
    for k, name in enumerate(pass_names):
        box(x + frame_pad, y, pass_w, pass_h, name,
            "#fde2c4" if name in highlight else "white")
        if k:
            arrow((x + frame_pad + pass_w / 2, y - pass_gap), (x + frame_pad + pass_w / 2, y))
        y += pass_h + pass_gap
    x += frame_w
    for stage in after:
        arrow((x, mid), (x + gap, mid))
        x += gap
        w = width_of(stage)
        box(x, mid - box_h / 2, w, box_h, "\n".join(stage), face_of(stage[0]))
        x += w
    return fig
