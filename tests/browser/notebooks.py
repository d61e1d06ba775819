"""Small notebooks built with nbformat: a healthy interactive one, and deliberately broken ones.

They exercise the checking code in lab.py without depending on the course's chapters.
"""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}

SETUP = """\
%matplotlib inline
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from ipywidgets import interact
"""

PLOT_INTERACT = """\
def show(n=3):
    x = np.linspace(0, 2 * np.pi, 200)
    fig, ax = plt.subplots(figsize=(4, 2.5))
    ax.plot(x, np.sin(n * x))
    ax.set_title(f"sin({n}x)")
    plt.show()

interact(show, n=(1, 10));
"""

BUTTON = """\
clicks = widgets.Output()
button = widgets.Button(description="Press me")

def on_click(_):
    with clicks:
        print("pressed")

button.on_click(on_click)
display(button, clicks)
"""


def _nb(*cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def healthy() -> nbformat.NotebookNode:
    """A slider with `interact` drawing a plot, a button, a print, a static plot, and an
    error that the chapter means to show (tagged `raises-exception`)."""
    expected_error = new_code_cell("1 / 0  # shown on purpose")
    expected_error.metadata["tags"] = ["raises-exception"]
    return _nb(
        new_markdown_cell("# A healthy sample chapter"),
        new_code_cell(SETUP),
        new_code_cell('print("hello from the kernel")'),
        new_code_cell(PLOT_INTERACT),
        new_code_cell(BUTTON),
        expected_error,
        new_code_cell("plt.plot([1, 3, 2]);\nplt.show()"),
        new_code_cell("widgets.FloatSlider(description='alone', min=0, max=1, value=0.5)"),
    )


def interact_raises() -> nbformat.NotebookNode:
    """An `interact` whose callback works at its first value and raises once the slider moves:
    the exception lands in the widget's Output, never in the cell outputs (nbclient passes)."""
    return _nb(
        new_code_cell(SETUP),
        new_code_cell(
            "def f(n=1):\n"
            "    if n != 1:\n"
            "        raise ValueError(f'deliberately broken callback, n={n}')\n"
            "    print('n is', n)\n"
            "\n"
            "interact(f, n=(1, 5));"
        ),
    )


def four_faults() -> nbformat.NotebookNode:
    """Four faults, each reported on its own: a widget whose view class does not exist in
    the browser (ipywidgets shows an error widget instead of the control, and no Python
    exception happens anywhere), a slider whose moves change nothing a learner can see
    (nothing observes it), a JavaScript output that throws in the page, and an ordinary
    error output in an untagged cell (the cells after it are then not run). One notebook, so
    JupyterLab opens one page and starts one kernel."""
    return _nb(
        new_code_cell(SETUP),
        new_code_cell(
            "from traitlets import Unicode\n"
            "\n"
            "class Missing(widgets.DOMWidget):\n"
            "    _view_name = Unicode('NoSuchView').tag(sync=True)\n"
            "    _view_module = Unicode('minijit-no-such-module').tag(sync=True)\n"
            "    _view_module_version = Unicode('0.0.1').tag(sync=True)\n"
            "\n"
            "Missing()"
        ),
        new_code_cell("widgets.IntSlider(description='inert', min=0, max=10)"),
        new_code_cell("from IPython.display import Javascript\n"
                      "Javascript(\"setTimeout(() => { throw new Error("
                      "'deliberately broken page'); }, 0)\")"),
        new_code_cell('print("fine")'),
        new_code_cell("raise RuntimeError('deliberately broken cell')"),
        new_code_cell('print("never reached")'),
    )


def figure_as_text() -> nbformat.NotebookNode:
    """A figure displayed while the kernel runs a non-inline backend (run it in a kernel whose
    environment has MPLBACKEND=Agg): the learner sees `<Figure size ...>`, not a plot."""
    return _nb(
        new_code_cell("import matplotlib.pyplot as plt"),
        new_code_cell("fig, ax = plt.subplots()\nax.plot([1, 3, 2])\nfig"),
    )
