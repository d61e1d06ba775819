"""A jaxpr laid out as a dataflow graph: boxes, positions and edges, no drawing (chapter 07).

`layout_jaxpr` computes where everything goes; `minijit.course.draw` paints it with
matplotlib. Keeping the two apart makes the layout plain data that tests can read.

The picture, left to right by depth: the inputs (constvars above the invars) in the first
column, each equation one column right of the deepest equation it reads from, the outputs in
the last column. A literal is a small label just left of the equation that reads it. An
equation that holds sub-jaxprs (`cond`, `while`, `scan`, `fori_loop`, `fused`, `jit`) is a
box with its sub-jaxprs laid out inside it, each in the same way. Every `fused` kernel gets a
group number, in the order the kernels appear (outer program first, then inside, depth-first),
and the drawing gives each group its own colour.

Coordinates are in inches, y growing downwards, so the drawing can be made at a fixed text
size: what fits here fits on the page. A wide program is wrapped into bands, one below the
other (`max_width`); an edge from one band to the next becomes a pair of named stubs. The
layout depends only on the program, so the same program is always drawn the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from minijit.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, Var, VarNames, name_like_the_printer
from minijit.passes import fused_p

FONT_PT = 7.5  # labels are monospace at this size, so their width can be computed
CHAR_IN = 0.6 * FONT_PT / 72  # the width of one character, in inches
LINE_IN = 1.3 * FONT_PT / 72
PAD_X, PAD_Y = 0.07, 0.05
COL_GAP, ROW_GAP = 0.55, 0.14  # between columns (literals sit in it) and between boxes
BAND_GAP = 0.45
CAPTION_IN = LINE_IN + 0.04  # the name of a sub-jaxpr (`body_jaxpr`) above its drawing


@dataclass
class Node:
    """One box of the picture. `key` is unique and stable (`eqn3`, `eqn3/body_jaxpr/eqn0`)."""

    key: str
    kind: str  # "input", "const", "literal", "eqn", "output"; "caption" names a sub-jaxpr
    label: str
    x: float  # left edge, inches
    y: float  # top edge, inches (y grows downwards)
    width: float
    height: float
    primitive: str | None = None
    group: int | None = None  # the fusion group: a `fused` equation, or one that will join it
    nested: bool = False  # a box that holds the drawings of its sub-jaxprs
    depth: int = 0  # how many boxes it sits inside

    @property
    def centre(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y + self.height / 2


@dataclass
class Edge:
    """Data flowing from `src` to `dst` (node keys); `name` is the value's printed name."""

    src: str
    dst: str
    name: str
    kind: str = "data"  # "data", "literal", or "wrapped" (crosses from one band to the next)


@dataclass
class Layout:
    """Everything `draw_jaxpr` paints, in inches. `groups` is the number of fusion groups."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0
    groups: int = 0

    def node(self, key: str) -> Node:
        return next(n for n in self.nodes if n.key == key)

    def of_kind(self, kind: str) -> list[Node]:
        return [n for n in self.nodes if n.kind == kind]


def fusion_groups(closed: ClosedJaxpr | Jaxpr) -> dict[int, int]:
    """id(Var) -> group number, for the outputs of every equation inside every `fused`
    kernel (numbered depth-first, in program order), and for the kernels' own outputs.

    Fusion keeps the equations' output Vars, so the map also finds, in the program *before*
    fusion, the equations that went into each kernel (`layout_jaxpr(before, colour_like=after)`).
    """
    out: dict[int, int] = {}

    def walk(jaxpr: Jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive is fused_p:
                group = len(set(out.values()))
                for inner in _all_eqns(eqn.params["jaxpr"]):
                    out.update((id(v), group) for v in inner.outvars)
                out.update((id(v), group) for v in eqn.outvars)
            else:
                for sub in _subjaxprs(eqn):
                    walk(sub[1])

    walk(_jaxpr(closed))
    return out


def layout_jaxpr(closed: ClosedJaxpr | Jaxpr, *, nested: bool = True, max_width: float = 11.0,
                 colour_like: ClosedJaxpr | Jaxpr | None = None) -> Layout:
    """Lay out a program (see the module docstring). `nested=False` draws an equation with
    sub-jaxprs as one box that counts their equations; `colour_like` (a fused version of the
    same program) gives each equation the group of the kernel it went into there."""
    jaxpr = _jaxpr(closed)
    names = VarNames()
    name_like_the_printer(jaxpr, names)
    groups = fusion_groups(colour_like if colour_like is not None else jaxpr)
    placer = _Placer(names, groups, nested)
    layout = Layout(groups=len(set(groups.values())))
    width, height = placer.place(jaxpr, "", layout, max_width=max_width)
    layout.width, layout.height = width, height
    return layout


# --------------------------------------------------------------------------- the work


def _jaxpr(closed: ClosedJaxpr | Jaxpr) -> Jaxpr:
    return closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed


def _subjaxprs(eqn: Eqn) -> list[tuple[str, Jaxpr]]:
    """(caption, jaxpr) for each sub-jaxpr in the params, in sorted param order."""
    out = []
    for key in sorted(eqn.params):
        value = eqn.params[key]
        items = value if isinstance(value, tuple) else (value,)
        for k, item in enumerate(items):
            sub = item.jaxpr if isinstance(item, ClosedJaxpr) else item
            if isinstance(sub, Jaxpr):
                out.append((f"{key}[{k}]" if isinstance(value, tuple) else key, sub))
    return out


def _all_eqns(jaxpr: Jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for _, sub in _subjaxprs(eqn):
            yield from _all_eqns(sub)


def _box(lines: list[str]) -> tuple[float, float]:
    return (max(map(len, lines)) * CHAR_IN + 2 * PAD_X, len(lines) * LINE_IN + 2 * PAD_Y)


def _short(value) -> str:
    value = np.asarray(value).item()
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


@dataclass
class _Level:
    """The boxes of one jaxpr while it is being laid out."""

    columns: list[list[Node]] = field(default_factory=lambda: [[]])
    column: dict[str, int] = field(default_factory=dict)  # node key -> its column
    literals: dict[str, list[Node]] = field(default_factory=dict)  # consumer key -> literals
    inside: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> nodes[a:b] in it

    def add(self, layout: Layout, node: Node, col: int) -> None:
        layout.nodes.append(node)
        self.column[node.key] = col
        while len(self.columns) <= col:
            self.columns.append([])
        self.columns[col].append(node)


class _Placer:
    def __init__(self, names: VarNames, groups: dict[int, int], nested: bool):
        self.names, self.groups, self.nested = names, groups, nested

    def binder(self, v: Var) -> str:
        return f"{self.names(v)}:{v.aval.str_short()}"

    def eqn_lines(self, eqn: Eqn) -> list[str]:
        head = eqn.primitive.name
        if eqn.primitive is fused_p:
            head += f" ({eqn.params['kind']})"
        outs = [self.binder(v) for v in eqn.outvars] or ["(no outputs)"]
        if len(outs) > 3:  # many outputs: a count, the printed program has the rest
            outs = [f"{len(outs)} outputs"]
        elif len(" ".join(outs)) <= 28:
            outs = [" ".join(outs)]
        return [head, *outs]

    def place(self, jaxpr: Jaxpr, prefix: str, layout: Layout, max_width: float,
              depth: int = 0) -> tuple[float, float]:
        """Add the nodes of `jaxpr` to `layout` with (0, 0) as the top-left corner; return the
        width and height used. Boxes inside a nested box are shifted by the caller."""
        start = len(layout.nodes)
        level = _Level()
        self.add_nodes(jaxpr, prefix, layout, level, max_width, depth)
        _place_rows(layout, level)
        _place_columns(layout, level, max_width)
        mine = layout.nodes[start:]
        return (max((n.x + n.width for n in mine), default=0.0),
                max((n.y + n.height for n in mine), default=0.0))

    def add_nodes(self, jaxpr: Jaxpr, prefix: str, layout: Layout, level: _Level,
                  max_width: float, depth: int) -> None:
        """Inputs in column 0, each equation one column right of its deepest input, outputs
        last; the edges between them; nested boxes laid out inside, at the box's (0, 0)."""
        where: dict[int, str] = {}  # id(Var) -> key of the node that defines it
        for kind, vars_ in (("const", jaxpr.constvars), ("input", jaxpr.invars)):
            for k, v in enumerate(vars_):
                key = f"{prefix}{kind}{k}"
                level.add(layout, Node(key, kind, self.binder(v), 0, 0,
                                       *_box([self.binder(v)]), depth=depth), 0)
                where[id(v)] = key

        for i, eqn in enumerate(jaxpr.eqns):
            key = f"{prefix}eqn{i}"
            col = 1 + max((level.column[where[id(a)]] for a in eqn.invars
                           if isinstance(a, Var) and id(a) in where), default=0)
            lines = self.eqn_lines(eqn)
            group = next((self.groups[id(v)] for v in eqn.outvars if id(v) in self.groups), None)
            node = Node(key, "eqn", "\n".join(lines), 0, 0, *_box(lines),
                        primitive=eqn.primitive.name, group=group, depth=depth)
            subs = _subjaxprs(eqn)
            if subs and self.nested:
                first = len(layout.nodes)
                self.add_inside(node, eqn, subs, layout, max_width, depth)
                level.inside[key] = (first, len(layout.nodes))
            elif subs:
                count = sum(1 for _, sub in subs for _ in _all_eqns(sub))
                lines = [*lines, f"[{count} equations inside]"]
                node.label = "\n".join(lines)
                node.width, node.height = _box(lines)
            level.add(layout, node, col)
            for k, a in enumerate(eqn.invars):
                if isinstance(a, Var) and id(a) in where:
                    layout.edges.append(Edge(where[id(a)], key, self.names(a)))
                elif isinstance(a, Lit):
                    text = _short(a.val)
                    lit = Node(f"{key}/lit{k}", "literal", text, 0, 0, len(text) * CHAR_IN,
                               LINE_IN, depth=depth)
                    layout.nodes.append(lit)
                    level.literals.setdefault(key, []).append(lit)
                    layout.edges.append(Edge(lit.key, key, text, "literal"))
            for v in eqn.outvars:
                where[id(v)] = key

        out_col = len(level.columns)
        for k, a in enumerate(jaxpr.outvars):
            key = f"{prefix}output{k}"
            text = self.names(a) if isinstance(a, Var) else _short(a.val)
            level.add(layout, Node(key, "output", f"out {text}", 0, 0, *_box([f"out {text}"]),
                                   depth=depth), out_col)
            if isinstance(a, Var) and id(a) in where:
                layout.edges.append(Edge(where[id(a)], key, text))

    def add_inside(self, node: Node, eqn: Eqn, subs, layout: Layout, max_width: float,
                   depth: int) -> None:
        """Lay out each sub-jaxpr under the box's header, one below the other, each under
        its caption (a kernel's one jaxpr has none); grow the box to hold them."""
        node.nested = True
        inner_w, cursor = 0.0, node.height
        for caption, sub in subs:
            caption_key = f"{node.key}/{caption}"
            if eqn.primitive is not fused_p:
                layout.nodes.append(Node(caption_key, "caption", caption, PAD_X, cursor,
                                         len(caption) * CHAR_IN, CAPTION_IN, depth=depth + 1))
                cursor += CAPTION_IN
            mark = len(layout.nodes)
            w, h = self.place(sub, caption_key + "/", layout, max_width - 2 * PAD_X, depth + 1)
            for n in layout.nodes[mark:]:
                n.x += PAD_X
                n.y += cursor
            inner_w, cursor = max(inner_w, w), cursor + h + ROW_GAP
        node.width = max(node.width, inner_w + 2 * PAD_X)
        node.height = cursor - ROW_GAP + PAD_Y


def _place_rows(layout: Layout, level: _Level) -> None:
    """Each box as near as it can to the mean height of the boxes it reads from, column by
    column, in program order where two want the same place."""
    preds: dict[str, list[Node]] = {}
    by_key = {n.key: n for col in level.columns for n in col}
    for e in layout.edges:
        if e.kind == "data" and e.dst in level.column:
            preds.setdefault(e.dst, []).append(by_key[e.src])

    def wanted(n: Node) -> float:
        ys = [p.y + p.height / 2 for p in preds.get(n.key, ())]
        return sum(ys) / len(ys) if ys else 0.0

    for col in level.columns:
        cursor = 0.0
        order = {id(n): k for k, n in enumerate(col)}
        for n in sorted(col, key=lambda n: (wanted(n), order[id(n)])):
            n.y = max(wanted(n) - n.height / 2, cursor)
            cursor = n.y + n.height + ROW_GAP


def _place_columns(layout: Layout, level: _Level, max_width: float) -> None:
    """x by the widest box of each column, wrapping into bands past `max_width`; then move
    what is inside each box, and the literals, along with their boxes."""
    columns = level.columns
    widths = [max((n.width for n in col), default=0.0) for col in columns]
    limit = max(max_width, max(widths) + 3.0)  # a wide box keeps a few neighbours in its band
    band_of, x_of, x, band = [], [], 0.0, 0
    for w in widths:
        if x > COL_GAP and x + w > limit:
            band, x = band + 1, COL_GAP  # room on the left for stubs and literals
        band_of.append(band)
        x_of.append(x)
        x += w + COL_GAP
    offsets, y = [], 0.0
    for b in range(band + 1):
        inside = [n for c, col in enumerate(columns) if band_of[c] == b for n in col]
        top = min((n.y for n in inside), default=0.0)
        offsets.append(y - top)
        y += max((n.y + n.height for n in inside), default=0.0) - top + BAND_GAP
    for c, col in enumerate(columns):
        for n in col:
            n.x = x_of[c] + (widths[c] - n.width) / 2
            n.y += offsets[band_of[c]]
            first, last = level.inside.get(n.key, (0, 0))
            for inner in layout.nodes[first:last]:  # laid out with the box at (0, 0)
                inner.x += n.x
                inner.y += n.y
            # literals sit in the gap to the left, above the edges that come in
            for k, lit in enumerate(reversed(level.literals.get(n.key, ()))):
                lit.x = n.x - lit.width - 0.05
                lit.y = n.y - LINE_IN * (0.6 + k)
    for e in layout.edges:
        if (e.kind == "data" and e.src in level.column and e.dst in level.column
                and band_of[level.column[e.src]] != band_of[level.column[e.dst]]):
            e.kind = "wrapped"
