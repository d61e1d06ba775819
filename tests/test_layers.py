"""minijit's modules import one way, from the bottom up (minijit/README.md, "The layers").

Layers, lowest first:
  values    abstract-value vocabulary with no minijit imports below it: dtypes, the eager
            `Array` type, configuration, errors, pytrees;
  ir        `core` (avals, `Primitive`, `bind`, the trace stack with `EvalTrace` at its
            bottom), the IR and its printer, every primitive with its abstract-eval rule,
            every impl rule, nested `jit` as a primitive;
  tracing   the staging trace, `lax` (its control flow is written with `lax` alone),
            `minijit.numpy`, indexing, the methods attached to arrays and tracers, and
            `debug` (its `debug_callback` is a primitive that code generation lowers)
            and `debugger`, the jdb behind `debug.breakpoint`, and `jvp`, a second
            interpretation on the trace stack;
  passes    the optimizer, the aliasing analysis included;
  codegen   Numba code generation, and the LLVM backend's (`minijit.llvm`, which allocates
            outputs as the Numba backend does);
  backends  the backend registry, and the default backend's choice between LLVM and Numba;
  jit       `jit`, argument handling, `explain`, `profile`;
  package   `minijit/__init__.py`;
  grading   the course's grader;
  course    the notebooks' helpers (pictures, views, widgets, timing), on top: they may use
            everything, and nothing in the library or the grader depends on them (the grader
            runs without matplotlib and ipywidgets).
A module may import from its own layer or a lower one, never from a higher one, and no two
modules may import each other, directly or round a longer cycle. Every import counts, including
the ones inside functions (a function-local import is still a dependency, only a hidden one);
imports under `if TYPE_CHECKING:` do not run, so they do not count. Every module must be in a
layer, so a new module is placed on purpose.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from import_cycles import strongly_connected

PACKAGE = Path(__file__).resolve().parent.parent / "minijit"

LAYERS = (  # (name, module prefixes), lowest first; the longest matching prefix wins
    ("values", ("minijit.dtypes", "minijit.array", "minijit.config", "minijit.errors",
                "minijit.tree_util", "minijit.tree", "minijit.version", "minijit.pretty_printer",
                "minijit.build", "minijit.threads")),
    ("ir", ("minijit.core", "minijit.ir", "minijit.primitives", "minijit.interpret",
            "minijit.jit_call")),
    ("tracing", ("minijit.tracing", "minijit.lax", "minijit.numpy", "minijit.indexing",
                 "minijit.array_methods", "minijit.debug", "minijit.debugger", "minijit.jvp")),
    ("passes", ("minijit.passes",)),
    ("codegen", ("minijit.codegen", "minijit.llvm")),
    ("backends", ("minijit.backends", "minijit.backend_choice")),
    ("jit", ("minijit.jit", "minijit.arguments", "minijit.explain", "minijit.profile",
             "minijit.device")),
    ("package", ("minijit",)),
    ("grading", ("minijit.grading",)),
    ("course", ("minijit.course",)),
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside `if TYPE_CHECKING:` blocks."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    return skip


def import_graph() -> dict[str, set[str]]:
    """module -> the minijit modules it imports (`from minijit import dtypes` is an import of
    `minijit.dtypes`, not of the package)."""
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_only(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = subs or [base]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def layer_of(module: str) -> int | None:
    """0.. in the order of LAYERS (the longest matching prefix wins; "minijit" names the
    package's `__init__` alone); None for a module in no layer."""
    best, length = None, 0
    for k, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            inside = module == p or (module.startswith(p + ".") and p != "minijit")
            if inside and len(p) > length:
                best, length = k, len(p)
    return best


def _name(k: int) -> str:
    return LAYERS[k][0]


def test_every_module_is_in_a_layer():
    unplaced = sorted(m for m in _modules() if layer_of(m) is None)
    assert not unplaced, f"add these modules to a layer in LAYERS: {unplaced}"


def test_no_module_imports_from_a_higher_layer():
    upward = [f"{a} ({_name(layer_of(a))}) imports {b} ({_name(layer_of(b))})"
              for a, targets in sorted(import_graph().items()) for b in sorted(targets)
              if (layer_of(b) or 0) > (layer_of(a) or 0)]
    assert not upward, "imports that run upward:\n  " + "\n  ".join(upward)


def test_no_import_cycles():
    cycles = [sorted(c) for c in strongly_connected(import_graph())]
    assert not cycles, f"modules that import each other: {cycles}"


def test_the_checker_sees_function_local_and_relative_imports():
    """The graph must not miss the imports it exists to catch."""
    graph = import_graph()
    assert "minijit.codegen.lower" in graph["minijit.codegen"]
    assert "minijit.codegen" in graph["minijit.backends"]  # inside NumbaBackend.compile
    assert "minijit.grading.kernel" in graph["minijit.grading.runner"]  # `from .kernel`
    assert "minijit.grading.runner" not in graph["minijit.grading.kernel"]  # TYPE_CHECKING
    # `from minijit.lax import ops`:
    assert "minijit.lax.ops" in graph["minijit.lax.control_flow.conditionals"]
    assert layer_of("minijit.codegen.lower") == 4 and layer_of("minijit.jit") == 6
    assert layer_of("minijit.jit_call") == 1 and layer_of("minijit") == 7
    assert layer_of("minijit.lax.control_flow") == 2 and layer_of("minijit.nonexistent") is None
    assert layer_of("minijit.lax.control_flow.loops") == 2
    assert layer_of("minijit.numpy.searching") == 2
    assert layer_of("minijit.numpy.convolution") == 2
    assert layer_of("minijit.numpy.array_creation") == 2
    assert layer_of("minijit.course.draw") == len(LAYERS) - 1
    fake = {"minijit.a": {"minijit.b"}, "minijit.b": {"minijit.a"}, "minijit.c": set()}
    assert strongly_connected(fake) == [{"minijit.a", "minijit.b"}]


def test_the_architecture_page_names_every_module():
    """minijit/README.md draws the layers; a module it does not mention is a drifted picture."""
    text = (PACKAGE / "README.md").read_text()
    tops = {p.name for p in PACKAGE.glob("*.py")} | {
        p.name + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    missing = sorted(t for t in tops if t != "__init__.py" and t not in text)
    assert not missing, f"minijit/README.md does not mention {missing}"
