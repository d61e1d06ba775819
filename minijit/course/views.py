"""Views for notebooks: two programs side by side, a picture next to its text, a table of the
pipeline's stages, a liveness chart, and a widget that steps a function of the learner's
through the passes (chapters 07 and 08).

Everything here returns HTML text or a widget, or prints; `side_by_side` displays. Nothing
here changes a program: the lessons' own cells do that.
"""

from __future__ import annotations

import base64
import html
import io
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from minijit.course.measure import describe, max_difference, stage_summary
from minijit.ir import ClosedJaxpr, Var
from minijit.passes import PIPELINE, BufferPlan, run_passes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_CELL = ('<td style="text-align:left; vertical-align:top"><b>{}</b>'
         '<pre style="font-size:85%">{}</pre></td>')


def side_by_side_html(left, right, left_title: str, right_title: str) -> str:
    """Two texts (programs, generated source) in two columns of a table, each with a title."""
    return ("<table><tr>" + _CELL.format(html.escape(left_title), html.escape(str(left)))
            + _CELL.format(html.escape(right_title), html.escape(str(right))) + "</tr></table>")


def side_by_side(before: ClosedJaxpr, after: ClosedJaxpr, name: str = "after") -> None:
    """Display a program before and after a pass (`name`), each titled by `describe`."""
    from IPython.display import HTML, display

    display(HTML(side_by_side_html(before, after, f"before: {describe(before)}",
                                   f"{name}: {describe(after)}")))


def beside_html(figure: Figure, text, figure_title: str = "", text_title: str = "") -> str:
    """A figure (as a PNG, shown at its own size) and a text (a program, generated source)
    next to each other, each under its title; they wrap one below the other when the page is
    too narrow for both."""
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=2 * figure.dpi)  # twice the pixels: sharp when zoomed
    data = base64.b64encode(png.getvalue()).decode("ascii")
    width = round(figure.get_figwidth() * figure.dpi)

    def titled(title: str, body: str) -> str:
        head = f"<b>{html.escape(title)}</b><br>" if title else ""
        return f"<div style='text-align:left'>{head}{body}</div>"

    return ("<div style='display:flex; flex-wrap:wrap; gap:1.5em; align-items:flex-start'>"
            + titled(figure_title, f"<img src='data:image/png;base64,{data}' width='{width}'>")
            + titled(text_title, f"<pre style='font-size:85%'>{html.escape(str(text))}</pre>")
            + "</div>")


def beside(figure: Figure, text, figure_title: str = "", text_title: str = ""):
    """`beside_html` as an HTML object: the value of a notebook cell shows it."""
    from IPython.display import HTML

    return HTML(beside_html(figure, text, figure_title, text_title))


def stages_table(records: Mapping[str, Sequence[tuple[str, ClosedJaxpr]]]):
    """An HTML table: one row per stage (`"traced"`, then each pass), one column per program,
    each cell `stage_summary` of that program after that stage. `records` maps a program's
    name to its `[("traced", traced), *record]` from `run_passes(..., record=record)`."""
    from IPython.display import HTML

    head = "".join(f"<th>{html.escape(name)}</th>" for name in records)
    body = ""
    first = next(iter(records.values()))
    for k, (stage, _) in enumerate(first):
        body += f"<tr><td style='text-align:left'><b>{html.escape(stage)}</b></td>" + "".join(
            f"<td style='text-align:left'>{stage_summary(rec[k][1])}</td>"
            for rec in records.values()) + "</tr>"
    return HTML(f"<table><tr><th>after</th>{head}</tr>{body}</table>"
                "<p>eqns: top-level equations (in parentheses: counting sub-jaxprs); "
                "temps: temporary arrays and their size</p>")


def liveness_chart(closed: ClosedJaxpr, plan: BufferPlan) -> None:
    """Print one row per value, one column per equation (the last: "returned"): `█` where the
    value is live, from the equation that defines it to the last that reads it, and the
    buffer `plan` gives it. Values are named a, b, c, ... in order of definition."""
    jaxpr = closed.jaxpr
    letters = "abcdefghijklmnopqrstuvwxyz"
    defined_at = {id(v): 0 for v in jaxpr.invars}
    names = {id(v): letters[k] for k, v in enumerate(jaxpr.invars)}
    last_use = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.invars:
            if isinstance(a, Var):
                last_use[id(a)] = i
        for v in eqn.outvars:
            defined_at[id(v)] = i
            names[id(v)] = letters[len(names) % 26]
    end = len(jaxpr.eqns)
    for v in jaxpr.outvars:
        last_use[id(v)] = end
    print(f"value  buffer  {''.join(str(i % 10) for i in range(end))}R")
    for vid, name in names.items():
        start, stop = defined_at[vid], last_use.get(vid, defined_at[vid])
        bar = "".join("█" if start <= i <= stop else "·" for i in range(end + 1))
        buffer = "input" if vid not in plan.buffer_of else plan.buffer_of[vid]
        print(f"{name:>5}  {buffer!s:>6}  {bar}")


# --------------------------------------------------------------------------- the stepper


def optimize_source(body: str, shape_text: str, passes: Sequence = PIPELINE):
    """Trace `def f(x): <body>` on random values in [0.5, 1.5) of the shape `shape_text`
    (`"256, 512"`), run `passes`, and return ([("traced", traced), (pass, after), ...], x).
    `np`, `mnp`, `lax` and `mj` are the body's names."""
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import lax

    source = "def f(x):\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    namespace = {"np": np, "mnp": mnp, "lax": lax, "mj": mj}
    exec(compile(source, "<your function>", "exec"), namespace)
    try:
        shape = tuple(int(s) for s in shape_text.replace(",", " ").strip("() ").split())
    except ValueError:
        raise ValueError(f"x.shape: write whole numbers separated by commas, like 256, 512 "
                         f"(got {shape_text!r})") from None
    arg = np.random.default_rng(0).random(shape) + 0.5
    stages = [("traced", mj.make_jaxpr(namespace["f"])(arg))]
    run_passes(stages[0][1], passes, record=stages)
    return stages, arg


class _Stepper:
    """The state behind `pass_stepper`: the last function optimized, and its HTML per step."""

    def __init__(self, passes: Sequence):
        self.passes, self.key, self.result = passes, None, None

    def html(self, body: str, shape_text: str, k: int) -> str:
        try:
            if self.key != (body, shape_text):  # keep only the current function
                self.key, self.result = None, optimize_source(body, shape_text, self.passes)
                self.key = (body, shape_text)
            stages, arg = self.result
            name, program = stages[k]
            if k == 0:
                view = f"<pre style='font-size:85%'>{html.escape(str(program))}</pre>"
            else:
                view = side_by_side_html(stages[k - 1][1], program, f"before {name}",
                                         f"after {name}")
            check = max_difference(stages[0][1], program, arg)
        except Exception as e:  # the learner's code: show the problem, do not raise
            return (f"<pre style='color:#b00000'>{html.escape(type(e).__name__)}: "
                    f"{html.escape(str(e))}</pre>")
        return (f"<b>step {k} of {len(stages) - 1}: {name}</b> · "
                f"{html.escape(describe(program))}{view}"
                f"largest difference to the traced program: {check:.1e}")


def pass_stepper(examples: Mapping[str, tuple[str, str]], passes: Sequence = PIPELINE):
    """A widget: pick an example or type the body of `f(x)` and the shape of `x`, then move
    the slider (or Play, or "next pass") to see the program before and after each pass.
    `examples` maps a name to (body, shape text); the first is shown first."""
    from ipywidgets import HTML as HTMLView
    from ipywidgets import (
        Button,
        Dropdown,
        HBox,
        IntSlider,
        Layout,
        Play,
        Text,
        Textarea,
        VBox,
        link,
    )

    stepper = _Stepper(passes)
    first_body, first_shape = next(iter(examples.values()))
    pick = Dropdown(options=list(examples), description="example")
    code_box = Textarea(value=first_body, rows=6, continuous_update=False,
                        description="def f(x):", layout=Layout(width="95%"))
    shape_box = Text(value=first_shape, continuous_update=False, description="x.shape")
    step = IntSlider(value=0, min=0, max=len(passes), description="step")
    play = Play(value=0, min=0, max=len(passes), interval=1500)
    next_button = Button(description="next pass")
    view = HTMLView()
    link((play, "value"), (step, "value"))

    def refresh(_=None):
        view.value = stepper.html(code_box.value, shape_box.value, step.value)

    def on_pick(change):
        code_box.value, shape_box.value = examples[change["new"]]
        step.value = 0
        refresh()

    def on_next(_):
        step.value = (step.value + 1) % (len(passes) + 1)

    pick.observe(on_pick, names="value")
    for widget in (code_box, shape_box, step):
        widget.observe(refresh, names="value")
    next_button.on_click(on_next)
    refresh()
    return VBox([HBox([pick, shape_box]), code_box, HBox([step, play, next_button]), view])
