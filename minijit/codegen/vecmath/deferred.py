"""Numba's decorators for `vecmath`, applied when the Numba backend first needs them.

Why. Both code generators use these functions. The Numba backend's generated code calls them,
and Numba compiles them; the LLVM backend reads their Python source and emits it itself
(`minijit/llvm/vecmath.py`), with no Numba at all. Importing Numba takes about 0.4 s, most of
a new process's first call where the LLVM backend compiles the program (see
benchmarks/README.md, W6). So the modules of `vecmath` do not import Numba: each function is a
plain Python function, marked with how Numba is to compile it (`jit(...)` or `intrinsic`), and
`compile_all()` makes the Numba functions (one for each) and puts them in place of the plain
ones in every namespace of the package. That is where Numba looks a function up when it types
a caller: generated code's `vecmath.tanh_f64`, or `_expm1_moderate` inside `tanh_f64`.

Who calls `compile_all()`: the Numba backend, when it loads (`codegen/compile.py`), before it
compiles anything; `folds`, which calls the casts of `bits`; and the first read of one of the
package's names, `vecmath.tanh_f64` or `vecmath.FUNCTIONS` (the Numba functions by (primitive,
dtype)), as a learner's own Numba code reads them.

Invariants: before `compile_all()`, nothing here has imported Numba; after it, no module of the
package holds a marked plain function, and `FUNCTIONS` holds Numba functions only; `plain(f)` is
the Python function behind `f`, marked or compiled, so a reader of the source (the LLVM
backend) finds the same function either way.
"""

from __future__ import annotations

import sys
import threading

_marked: list = []  # every marked function, in the order the modules define them
_compiled: dict[int, object] = {}  # id(plain function) -> its Numba function
_plain_of: dict[int, object] = {}  # id(Numba function) -> its plain function
_lock = threading.Lock()


def jit(**options):
    """`numba.njit(**options)`, applied by `compile_all()`."""
    def mark(fn):
        fn.numba_options = ("njit", options)
        _marked.append(fn)
        return fn
    return mark


def intrinsic(fn):
    """`numba.extending.intrinsic`, applied by `compile_all()`; `fn(typingctx, *args)` imports
    what it needs of Numba itself, when Numba types a call of it."""
    fn.numba_options = ("intrinsic", {})
    _marked.append(fn)
    return fn


def is_marked(fn) -> bool:
    """Is `fn` one of the package's functions, plain or compiled?"""
    return hasattr(plain(fn), "numba_options")


def plain(fn):
    """The plain Python function behind `fn` (`fn` itself when it is not a Numba function of
    this package)."""
    return _plain_of.get(id(fn), fn)


def compile_all() -> None:
    """Make every marked function's Numba function and put it in the package's namespaces."""
    if _compiled:
        return
    # Importing this module ran the package's __init__, which imports every module of the
    # package: every mark is made by now.
    package = __name__.rpartition(".")[0]
    with _lock:
        if _compiled:
            return
        import numba
        from numba.extending import intrinsic as numba_intrinsic

        made = {}
        for fn in _marked:
            kind, options = fn.numba_options
            made[id(fn)] = numba_intrinsic(fn) if kind == "intrinsic" else numba.njit(**options)(fn)
            _plain_of[id(made[id(fn)])] = fn
        for name, module in list(sys.modules.items()):
            if module is not None and (name == package or name.startswith(package + ".")):
                for attr, value in list(vars(module).items()):
                    if id(value) in made:
                        setattr(module, attr, made[id(value)])
        _compiled.update(made)  # last: a thread that sees it filled sees every module patched


def compiled(fn):
    """The Numba function of the marked function `fn` (after `compile_all()`)."""
    compile_all()
    return _compiled[id(plain(fn))]
