"""The course's notebook helpers (`minijit.course`): the jaxpr drawing, the pipeline figure,
the views and the measures that chapters 07 and 08 show.

The drawing is checked through its layout (plain data: every equation a node, positions the
same on every run, boxes inside their parents and apart from their siblings, one colour per
fusion group) and through what matplotlib was given to paint. Drawn with the Agg backend.
"""

from __future__ import annotations

import base64
import html
import re
import struct

import matplotlib
import numpy as np
import pytest
from catalogue import PROGRAMS
from matplotlib.colors import to_hex
from matplotlib.patches import FancyBboxPatch

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.course import (
    beside,
    beside_html,
    count_eqns,
    describe,
    draw_fusion,
    draw_jaxpr,
    draw_pipeline,
    fusion_groups,
    group_colour,
    layout_jaxpr,
    max_difference,
    optimize_source,
    pass_stepper,
    side_by_side_html,
    stage_summary,
    stages_table,
    temporaries,
    traffic,
)
from minijit.course.graph import Layout
from minijit.course.views import _Stepper
from minijit.passes import PIPELINE, cse, dce, fold_constants, fuse_elementwise, run_passes
from minijit.passes import simplify as simplify_pass

matplotlib.use("Agg")  # never a window, whatever the environment asks for

X = np.linspace(0.5, 1.5, 24).reshape(4, 6)


def softmax(x):
    z = x - mnp.max(x, axis=-1, keepdims=True)
    return mnp.exp(z) / mnp.sum(mnp.exp(z), axis=-1, keepdims=True)


def gelu(x):
    c = mnp.sqrt(2.0 / mnp.pi)
    return 0.5 * x * (1.0 + mnp.tanh(c * (x + 0.044715 * x ** 3)))


def control_flow(p, x):
    y = lax.cond(p, lambda x: mnp.sin(x) * 2.0, lambda x: x + 1.0, x)
    # counting by 2, it stays a while (counted_loops makes a count by 1 a fori_loop)
    z = lax.while_loop(lambda c: c[0] < 6, lambda c: (c[0] + 2, c[1] * 2.0), (0, y))
    s, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, y)
    w = lax.fori_loop(0, 3, lambda i, v: mnp.cos(v) * 0.5 + 1.0, y)
    inner = lax.fori_loop(0, 2, lambda i, v: lax.cond(v[0] > 0, lambda v: mnp.exp(v) * 3.0,
                                                       lambda v: v, v), y)
    return z[1] + s + w + ys + inner


def long_chain(x):
    for _ in range(13):
        x = mnp.sin(x) * 0.9 + 0.1
    return x


def traced(fn, *args):
    return mj.make_jaxpr(fn)(*args)


def clean(closed):
    return run_passes(closed, [fold_constants, simplify_pass, cse, dce])


def boxes(layout: Layout):
    return [n for n in layout.nodes if n.kind not in ("literal", "caption")]


def parent(key: str) -> str:
    return key.rpartition("/")[0]


def snapshot(layout: Layout):
    return [(n.key, n.kind, n.label, round(n.x, 9), round(n.y, 9), round(n.width, 9),
             round(n.height, 9), n.group) for n in layout.nodes], [
        (e.src, e.dst, e.name, e.kind) for e in layout.edges]


def check_geometry(layout: Layout):
    """Boxes of one jaxpr do not overlap; a nested box holds everything drawn inside it."""
    by_key = {n.key: n for n in layout.nodes}
    assert len(by_key) == len(layout.nodes), "node keys must be unique"
    found = boxes(layout)
    for i, a in enumerate(found):
        for b in found[i + 1:]:
            if parent(a.key) == parent(b.key):
                apart = (a.x + a.width <= b.x + 1e-9 or b.x + b.width <= a.x + 1e-9
                         or a.y + a.height <= b.y + 1e-9 or b.y + b.height <= a.y + 1e-9)
                assert apart, f"{a.key} and {b.key} overlap"
    for n in layout.nodes:
        segments = n.key.split("/")
        if n.kind == "literal":  # it sits left of the equation that reads it, not inside
            segments = segments[:-1]
        for k in range(1, len(segments)):
            owner = by_key.get("/".join(segments[:k]))
            if owner is None or owner.kind != "eqn":  # a caption names a sub-jaxpr
                continue
            assert owner.nested, owner.key
            assert owner.x - 1e-9 <= n.x and n.x + n.width <= owner.x + owner.width + 1e-9, \
                f"{n.key} sticks out of {owner.key} sideways"
            assert owner.y - 1e-9 <= n.y and n.y + n.height <= owner.y + owner.height + 1e-9, \
                f"{n.key} sticks out of {owner.key} vertically"
    assert all(n.x >= -1.0 and n.y >= -1.0 for n in layout.nodes)
    assert all(n.x + n.width <= layout.width + 1e-9 for n in found)
    assert all(n.y + n.height <= layout.height + 1e-9 for n in found)


# --------------------------------------------------------------------------- the layout


@pytest.mark.parametrize("fn, args", [(gelu, (X,)), (softmax, (X,)),
                                      (control_flow, (True, np.ones(4))), (long_chain, (X,))],
                         ids=["gelu", "softmax", "control_flow", "long_chain"])
def test_layout_is_deterministic_and_geometric(fn, args):
    first = traced(fn, *args)
    for program in (first, run_passes(first)):
        again = snapshot(layout_jaxpr(program))
        assert snapshot(layout_jaxpr(program)) == again
        # a fresh trace of the same function is a new set of objects: same picture
        retraced = traced(fn, *args)
        if program is not first:
            retraced = run_passes(retraced)
        assert snapshot(layout_jaxpr(retraced)) == again
        check_geometry(layout_jaxpr(program))


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_equation_is_a_node(prog):
    args = prog.make_args()
    closed = mj.make_jaxpr(prog.minijit_fn(), static_argnums=prog.static_argnums)(*args)
    for program in (closed, run_passes(closed)):
        layout = layout_jaxpr(program)
        eqns = layout.of_kind("eqn")
        assert len(eqns) == count_eqns(program.jaxpr)
        top = [n for n in eqns if "/" not in n.key]
        assert [n.primitive for n in top] == [e.primitive.name for e in program.eqns]
        assert len(layout.of_kind("output")) >= len(program.jaxpr.outvars)
        flat = layout_jaxpr(program, nested=False)
        assert len(flat.of_kind("eqn")) == len(program.eqns)
        check_geometry(flat)


def test_inputs_constvars_literals_and_outputs_are_told_apart():
    def with_const(x):
        return x * mnp.arange(6.0) + 2.5

    program = traced(with_const, X)
    folded = fold_constants(program)
    layout = layout_jaxpr(folded)
    assert len(layout.of_kind("const")) == len(folded.jaxpr.constvars) >= 1
    assert len(layout.of_kind("input")) == 1 and len(layout.of_kind("output")) == 1
    assert [n.label for n in layout.of_kind("literal")] == ["2.5"]
    assert {e.kind for e in layout.edges} >= {"data", "literal"}
    fig = draw_jaxpr(folded)
    patches = [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]
    styles = {n.kind: p for n, p in zip(boxes(layout), patches)}
    assert to_hex(styles["const"].get_facecolor()) != to_hex(styles["input"].get_facecolor())
    assert styles["const"].get_linestyle() != styles["eqn"].get_linestyle()


def test_columns_follow_depth():
    layout = layout_jaxpr(traced(gelu, X), max_width=float("inf"))
    node = {n.primitive or n.key: n for n in layout.nodes}
    assert layout.node("input0").x < node["sqrt"].x
    # the same column (boxes are centred in it): both read nothing but the input
    assert node["sqrt"].centre[0] == pytest.approx(node["integer_pow"].centre[0])
    assert node["tanh"].x > node["sqrt"].x
    assert layout.node("output0").x == max(n.x for n in boxes(layout))


def test_a_long_program_wraps_into_bands_of_the_width_asked_for():
    program = traced(long_chain, X)
    assert len(program.eqns) == 39
    layout = layout_jaxpr(program, max_width=11.0)
    assert layout.width <= 11.0 + 1e-9
    wrapped = [e for e in layout.edges if e.kind == "wrapped"]
    assert wrapped and all(e.name for e in wrapped)
    assert layout.height > 3 * max(n.height for n in boxes(layout))
    check_geometry(layout)


def test_nested_control_flow_is_drawn_inside_its_boxes():
    program = run_passes(traced(control_flow, True, np.ones(4)))
    layout = layout_jaxpr(program)
    check_geometry(layout)
    by_primitive = {}
    for n in layout.of_kind("eqn"):
        by_primitive.setdefault(n.primitive, []).append(n)
    for name in ("cond", "while", "scan", "fori_loop", "fused"):
        assert any(n.nested for n in by_primitive[name]), name
    captions = {n.label for n in layout.of_kind("caption")}
    assert {"branches[0]", "branches[1]", "body_jaxpr", "cond_jaxpr", "jaxpr"} <= captions
    # a cond inside a fori_loop body: three levels deep, inside both boxes
    deep = [n for n in layout.of_kind("eqn") if n.depth >= 3]
    assert deep and all(n.key.count("/") >= 4 for n in deep)
    assert max(n.depth for n in layout.nodes) >= 3


# --------------------------------------------------------------------------- fusion groups


def test_fusion_groups_get_distinct_colours_and_match_before_and_after():
    before = clean(traced(softmax, X))
    after = fuse_elementwise(before)
    kernels = [e for e in after.eqns if e.primitive.name == "fused"]
    assert len(kernels) == 2
    groups = fusion_groups(after)
    assert sorted(set(groups.values())) == [0, 1]

    after_layout = layout_jaxpr(after)
    assert after_layout.groups == 2
    fused_nodes = [n for n in after_layout.of_kind("eqn") if n.primitive == "fused"]
    assert sorted(n.group for n in fused_nodes) == [0, 1]

    before_layout = layout_jaxpr(before, colour_like=after)
    coloured = {}
    for n in before_layout.of_kind("eqn"):
        coloured.setdefault(n.group, []).append(n.primitive)
    assert len(coloured[0]) == len(kernels[0].params["jaxpr"].eqns)
    assert len(coloured[1]) == len(kernels[1].params["jaxpr"].eqns)
    assert "reduce_max" in coloured[None]  # not fused: no colour

    fig = draw_fusion(before, after)
    assert len(fig.axes) == 2
    edge_colours = {to_hex(p.get_edgecolor()) for ax in fig.axes for p in ax.patches
                    if isinstance(p, FancyBboxPatch)}
    assert {group_colour(0), group_colour(1)} <= edge_colours
    colours = [group_colour(k) for k in range(60)]
    assert len(set(colours)) == len(colours)


def test_kernels_inside_control_flow_are_numbered_depth_first():
    program = run_passes(traced(control_flow, True, np.ones(4)))
    layout = layout_jaxpr(program)
    fused = [n for n in layout.of_kind("eqn") if n.primitive == "fused"]
    assert len(fused) >= 3
    assert sorted(n.group for n in fused) == list(range(len(fused)))
    assert layout.groups == len(fused)


# --------------------------------------------------------------------------- what is drawn


def test_draw_jaxpr_paints_a_box_per_node_and_a_text_per_label():
    program = run_passes(traced(control_flow, True, np.ones(4)))
    layout = layout_jaxpr(program)
    fig = draw_jaxpr(program, title="control flow")
    ax = fig.axes[0]
    assert len([p for p in ax.patches if isinstance(p, FancyBboxPatch)]) == len(boxes(layout))
    texts = [t.get_text() for t in ax.texts]
    assert "control flow" in texts
    for n in layout.nodes:
        assert n.label in texts, n.label
    assert fig.get_size_inches()[0] == pytest.approx(layout.width + 0.5)


def test_draw_jaxpr_into_given_axes():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        assert draw_jaxpr(traced(gelu, X), ax=ax) is fig
        assert ax.patches
    finally:
        plt.close(fig)


def test_the_pipeline_figure_is_drawn_from_the_pipeline():
    texts = [t.get_text() for t in draw_pipeline().axes[0].texts]
    names = [p.__name__ for p in PIPELINE]
    positions = [texts.index(name) for name in names]
    assert positions == sorted(positions)
    assert any("make_jaxpr" in t for t in texts) and any("numba.njit" in t for t in texts)
    assert [t for t in texts if t.startswith("codegen")]
    mine = [t.get_text() for t in draw_pipeline([cse, dce], highlight=["dce"]).axes[0].texts]
    assert "cse" in mine and "dce" in mine and "simplify" not in mine


# --------------------------------------------------------------------------- views, measures


def test_beside_shows_the_picture_as_a_png_next_to_the_escaped_text():
    program = traced(control_flow, True, np.ones(4))
    fig = draw_jaxpr(program)
    page = beside_html(fig, program, "drawn", "printed <as text>")
    (data,) = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    png = base64.b64decode(data)
    assert png.startswith(b"\x89PNG")
    # the PNG has twice the pixels of the figure, shown at the figure's own size
    assert struct.unpack(">II", png[16:24]) == pytest.approx(
        tuple(2 * fig.dpi * s for s in fig.get_size_inches()), abs=2)
    assert f"width='{round(fig.get_figwidth() * fig.dpi)}'" in page
    assert html.escape(str(program)) in page and "printed &lt;as text&gt;" in page
    assert page.index("drawn") < page.index("<img") < page.index("printed") < page.index("<pre")
    assert "flex-wrap:wrap" in page  # one below the other on a narrow page
    assert beside(fig, "x").data == beside_html(fig, "x")


def test_measures_on_gelu():
    program = clean(traced(gelu, np.ones((256, 512))))
    fused = fuse_elementwise(program)
    assert describe(program) == "9 equations, 8 temporary arrays, 8.0 MiB"
    assert describe(fused) == "1 equation (10 counting sub-jaxprs), 0 temporary arrays, 0 bytes"
    assert stage_summary(fused) == "1 eqns (10) · 0 temps · 0 bytes"
    assert len(temporaries(program)) == 8
    assert traffic(fused) == 2 * 256 * 512 * 8
    assert max_difference(program, fused, np.ones((256, 512))) < 1e-12


def test_side_by_side_escapes_and_the_stages_table():
    html = side_by_side_html("a < b", "c & d", "<left>", "right")
    assert "a &lt; b" in html and "c &amp; d" in html and "&lt;left&gt;" in html
    record = [("traced", traced(gelu, X))]
    run_passes(record[0][1], record=record)
    table = stages_table({"GELU": record}).data
    assert table.count("<tr>") == len(PIPELINE) + 2  # header, traced, one per pass
    assert "fuse_elementwise" in table


def test_the_stepper_shows_every_step_and_the_learners_errors():
    stages, arg = optimize_source("return mnp.sin(x) * 1.0 + mnp.sin(x)", "3, 4")
    assert [name for name, _ in stages] == ["traced"] + [p.__name__ for p in PIPELINE]
    assert arg.shape == (3, 4)
    stepper = _Stepper(PIPELINE)
    body = "return mnp.sin(x) * 1.0"
    assert "step 0 of" in stepper.html(body, "5", 0)
    assert "after simplify" in stepper.html(body, "5", 3)
    assert "ValueError" in stepper.html(body, "five", 0)
    assert "TracerBoolConversionError" in stepper.html("if x > 0:\n    return x\nreturn -x",
                                                       "3", 0)
    widget = pass_stepper({"sin": (body, "4")})
    assert "step 0 of" in widget.children[-1].value
