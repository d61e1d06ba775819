"""minijit: a small, readable tracing JIT compiler for NumPy programs.

    import minijit as mj
    import minijit.numpy as mnp

    @mj.jit
    def f(x):
        return mnp.sum(mnp.tanh(x) * 2.0)

    print(mj.make_jaxpr(f)(np.ones(3)))

The public API mirrors JAX for the subset it supports; see README.md for the course map.
"""

from minijit import array_methods as _array_methods  # noqa: F401  (attaches tracer operators)
from minijit import build, debug, errors, lax, tree, tree_util
from minijit import numpy as numpy
from minijit import threads as _threads  # noqa: F401  (OpenMP's idle threads sleep: threads.py)
from minijit.array import Array
from minijit.config import config, debug_nans, disable_jit
from minijit.core import Primitive, ShapedArray, ShapeDtypeStruct, bind
from minijit.debug import checking_leaks
from minijit.device import block_until_ready, device_put, effects_barrier
from minijit.interpret import eval_jaxpr
from minijit.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, Var, typecheck_jaxpr
from minijit.jit import eval_shape, jit, make_jaxpr
from minijit.jvp import jvp
from minijit.tracing import Tracer
from minijit.version import __version__  # noqa: F401 - minijit.__version__

check_tracer_leaks = checking_leaks  # JAX's other name: `with jax.check_tracer_leaks():`

__all__ = [
    "Array", "ClosedJaxpr", "Eqn", "Jaxpr", "Lit", "Primitive", "ShapeDtypeStruct", "ShapedArray",
    "Tracer", "Var", "bind", "block_until_ready", "build", "check_tracer_leaks", "checking_leaks",
    "config", "debug", "debug_nans", "device_put", "disable_jit", "effects_barrier", "errors",
    "eval_jaxpr", "eval_shape", "jit", "jvp",
    "lax", "make_jaxpr", "numpy", "tree", "tree_util", "typecheck_jaxpr",
]
