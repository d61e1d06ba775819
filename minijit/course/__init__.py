"""The course's helpers for notebooks: pictures, side-by-side views, widgets and timing.

Chapters import what they show from here, so that their cells hold the lesson and not the
plumbing. It sits on top of the library (it may use every module) and needs the `course`
extra (matplotlib, ipywidgets, IPython); `import minijit` never imports it.

- `graph`: a jaxpr laid out as a dataflow graph, as plain data (`layout_jaxpr`);
- `draw`: that layout drawn with matplotlib (`draw_jaxpr`, `draw_fusion`), and the pipeline
  `jit` runs, drawn from `minijit.passes.PIPELINE` (`draw_pipeline`);
- `measure`: equations, temporary arrays, bytes of memory traffic;
- `timing`: the one way every chapter times a call (`time_calls`, `first_call`), its method
  stated in its docstring;
- `views`: two programs side by side, a picture next to its text (`beside`), a table of the
  pipeline's stages, a liveness chart, and the pass-by-pass stepper widget;
- `mine`: the learner's own pieces of minijit, read from their exercise notebooks and
  switched in at the top of chapters 03 to 10 (`use_mine`), and minijit's own for a block
  (`minijits_own`);
- `xla`: the kernels of a program `jax.jit` compiled, read from its HLO text
  (`xla_kernels`, chapter 10).

Chapters 07 and 08 use most of them; chapters 03, 09 and 10 draw programs and the pipeline too.
The names above are exported here. Each of the following serves one or two chapters, which
import it from its own module (`from minijit.course.crossover import draw_crossover`):

- `crossover`: total time against the number of calls, and the break-even point (01, 10);
- `on_jax`: a program's code run on JAX, and JAX's first call, per-call time and threads
  measured, with recorded figures for a machine without JAX (10);
- `tables`: an HTML table whose every cell is escaped (10);
- `promotion`: a dtype-promotion explorer, minijit's result beside NumPy's (03);
- `buckets`: padding into buckets, traces against calls, under sliders (04);
- `captures`: a jaxpr drawn with each operand of a `cond`, `while` or `scan` led to the input
  it becomes, captured values marked (05);
- `newton`: the error of Newton's square root, per value and per iteration (05);
- `run_counts`: how often a jitted function's Python and its staged callback run (06);
- `profile_cost`: what `profile_execution` costs a call, measured in a fresh process (06);
- `dead_code`: the backward walk of dead code elimination, as a table and a picture (07);
- `fusion_savings`: the arrays a fused kernel saves, and time per element (09);
- `ulp`: the distance between floats in units in the last place (09, 10);
- `capstone`: the learner's logsumexp on their logaddexp, read from exercise notebook 10, the
  pieces each stage called, and a pass-by-pass stepper over a recorded run (10);
- `softplus`: the learner's Numba rule for softplus, read from exercise notebook 09, and the
  generated lines it wrote (10);
- `fonts`: a Chinese font behind matplotlib's default, used when the course language is
  Chinese (every chapter that plots imports this package).
"""

from minijit.course.draw import draw_fusion, draw_jaxpr, draw_pipeline, group_colour
from minijit.course.graph import Edge, Layout, Node, fusion_groups, layout_jaxpr
from minijit.course.measure import (
    count_eqns,
    describe,
    fmt_bytes,
    max_difference,
    nbytes,
    plural,
    stage_summary,
    temporaries,
    traffic,
)
from minijit.course.mine import WRITTEN_BY, minijits_own, use_mine
from minijit.course.timing import first_call, fmt_seconds, seconds_per_call, time_calls
from minijit.course.views import (
    beside,
    beside_html,
    liveness_chart,
    optimize_source,
    pass_stepper,
    side_by_side,
    side_by_side_html,
    stages_table,
)
from minijit.course.xla import Kernel, xla_kernels
from minijit.grading.messages import language

if language() == "zh":
    from minijit.course.fonts import use_cjk_font

    use_cjk_font()

__all__ = [
    "beside", "beside_html", "count_eqns", "describe", "draw_fusion", "draw_jaxpr",
    "draw_pipeline", "Edge", "first_call", "fmt_bytes", "fmt_seconds", "fusion_groups",
    "group_colour", "Kernel", "Layout", "layout_jaxpr", "liveness_chart", "max_difference",
    "minijits_own", "nbytes", "Node", "optimize_source", "pass_stepper", "plural",
    "seconds_per_call", "side_by_side", "side_by_side_html", "stage_summary", "stages_table",
    "temporaries", "time_calls", "traffic", "use_mine", "WRITTEN_BY", "xla_kernels",
]
