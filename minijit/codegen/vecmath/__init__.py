"""Vectorizable math for generated Numba code: exp, expm1, log, log1p, tanh, logistic, sin,
cos, erf.

Why. The generated loops are Numba functions, and a loop such as
`out[i] = 0.5*x[i]*(1 + np.tanh(...))` calls the scalar libm `tanh` once per element: pip's
Numba ships without a vector math library (Intel SVML), so LLVM cannot widen the call and
the loop stays scalar, several times slower than XLA, which emits its own polynomial
approximations. This package provides such approximations itself, as SLEEF, Eigen, XLA
and fdlibm/Cephes do, written so that LLVM's loop vectorizer widens a loop that calls them.

How. Every function is range reduction + polynomial (details in `exp_log` and `hyperbolic`):
- exp/expm1: x = k*ln2 + r (Cody-Waite two-constant reduction), a polynomial in r, then
  a scale by 2**k built from exponent bits (`bits.py`), never libm's `ldexp`;
- log/log1p: x = 2**k * m from the bits, m in [sqrt(1/2), sqrt(2)), log(m) from s = (m-1)/(m+1)
  and fdlibm's minimax polynomial in s*s;
- tanh = sign(x) * e/(e + 2) with e = expm1(2|x|), logistic = num/(1 + exp(-|x|));
- sin/cos (`trig.py`): Cody-Waite reduction by pi/2, branch-free Payne-Hanek beyond it,
  fdlibm's polynomials; erf (`erf.py`): fdlibm's rationals, selected by interval.
The code is branch-free: special cases (nan, +-inf, -0.0, overflow, subnormals) are
conditional expressions whose both sides are computed, which LLVM turns into `select`s and
the vectorizer if-converts; nothing on the path calls libm.

Compilation. Each function is a plain `numba.njit(error_model="numpy", cache=True)` scalar
function (cached, so a new process loads it instead of compiling it again: that saved about
0.5 s on the first program of each new process, measured with a warm disk cache): the
NumPy error model drops the ZeroDivisionError branch from divisions, and LLVM inlines the
compiled function into the caller's loop (tests/test_vecmath.py checks both the inlining and
the vector instructions, for every function and dtype). Measured against
`inline="always"` (Numba-level inlining, which recompiles the body under the caller's
error model): the same speed in a loop compiled with the NumPy error model, and in a loop
compiled with the default error model `inline="always"` leaves the loop scalar whenever the
body divides (tanh, logistic), 2-8x slower. The functions must not be compiled with
`fastmath`: the rounding trick (x + 1.5*2**52) - 1.5*2**52 and the nan tests x == x need IEEE
semantics (a fastmath caller is fine: each inlined instruction keeps its own flags).
The modules mark each function with those options (`deferred.jit`) and import no Numba;
`deferred.compile_all()` applies them when the Numba backend loads, so that a program the LLVM
backend compiles, which reads the same functions' source, does not import Numba (`deferred`).

float32. The float32 functions compute in float32 (np.float32 constants throughout: a Python
float would promote the expression to float64). Measured 1.2-2x faster (AVX-512 host) and
1.4-2.4x faster (AVX2, NUMBA_CPU_NAME=haswell) than computing in float64 and rounding once,
because a vector holds twice as many float32 lanes; expm1 is the exception on AVX-512 (equal).

Contract, every function and dtype: result dtype = argument dtype; nan in -> nan out; the
special values are NumPy's: exp(-inf) = 0, exp(inf) = inf, exp overflows to inf past
709.78 (float64) / 88.72 (float32) and underflows gradually through the subnormals;
expm1(-inf) = -1; log(0) = -inf, log(x < 0) = nan, log(inf) = inf; log1p(-1) = -inf;
tanh(+-inf) = +-1; logistic(-inf) = 0, logistic(inf) = 1; expm1, log1p and tanh keep the sign
of -0.0 and return tiny (subnormal) inputs unchanged; log of a subnormal is accurate.

Accuracy, measured (max distance in ulp; "exact" = the correctly rounded value, from
NumPy in long double for float64 and in float64 for float32; float64: 10 million seeded
random bit patterns over every binade plus 1.2 million grid points; float32: every one of
the 2**32 float32 inputs; logistic's NumPy reference is where(x >= 0, 1, e)/(1 + e) with
e = np.exp(-|x|)). The last column is NumPy's own distance from exact on the sample, which
is why a result 1 ulp from exact can be 4 from NumPy:

    function   float64              float32 (all inputs)   NumPy vs exact
               vs NumPy  vs exact   vs NumPy  vs exact     float64  float32
    exp           1         1          3         1            1        2
    expm1         2         2          2         2            1        2
    log           1         1          4         1            1        3
    log1p         1         1          2         1            1        2
    tanh          3         2          3         2            1        1
    logistic      2         2          4         2            2        3

Speed, measured on the development machine (one core of an AVX-512 Xeon, Numba 0.68; a
loop `out[i] = f(x[i])` over 10**6 elements in cache, ns per element):

    loop calling        float64   float32
    tanh (this)           1.8       0.64      np.tanh in the same loop: 12.6 / 12.1
    exp (this)            1.9       0.54      np.exp in the same loop:   4.3 /  2.1
    GELU, tanh form       2.3       0.86      with np.tanh:             15.5 / 13.3

NumPy's own SIMD np.tanh(x) / np.exp(x) take 1.3 / 0.65 (float64) and 0.29 / 0.46
(float32); jax.jit of the same GELU on one core 1.35 / 0.58. At 10**7 elements the loops are
memory-bound and on par with NumPy (float64 tanh 3.5 vs 3.9, float32 exp 1.7 vs 2.5).

Those loops had 256-bit vectors, LLVM's choice on that CPU. With 512-bit vectors, which minijit
asks for there (`codegen/vector_width.py`), the same loops measured again, 256-bit then
512-bit in one process, three processes at load average 0.9 (ns per element): float64 tanh
2.4-2.6 / 1.8-2.4, exp 2.3-2.6 / 1.7-2.0, GELU 3.2-3.6 / 2.4-2.6; float32 tanh 0.82-0.95 /
0.66-0.69, exp 0.81-0.97 / 0.57-0.69, GELU 1.21-1.27 / 0.80-0.89.

The tests hold every function to 4 ulp of NumPy over a full-range sample.

`FUNCTIONS` maps (primitive name, dtype name) to the compiled scalar function, e.g.
`FUNCTIONS["exp", "float64"] is exp_f64`; the code generator calls these in place of
`np.exp` etc. for float32 and float64 elements: those named in `DEFAULT`, or all of them with
`config.update("vector_math", "all")` (see `DEFAULT` for why sin, cos and erf wait for that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minijit.codegen.vecmath import deferred, erf, exp_log, hyperbolic, trig

if TYPE_CHECKING:
    from numba.core.dispatcher import Dispatcher

# The functions the code generator calls by default (config "vector_math" True): inlined into
# each loop, they add 0.1 to 0.2 s to a program's compile. sin, cos and erf vectorize only when
# inlined too, and then add 1 to 3 s to every program that uses them (measured: sin and cos
# together 2.8 to 3.6 s a program against 0.1 s with libm; erf 1.1 s); not inlined, they stay
# scalar and slower than libm. So they are used only with config "vector_math" set to "all".
DEFAULT = frozenset({"exp", "expm1", "log", "log1p", "tanh", "logistic"})

# One entry per (primitive, dtype): the plain Python function, whose source the LLVM backend
# reads. The package's own names (`vecmath.tanh_f64`) and `FUNCTIONS` are Numba's (below).
SOURCES = {
    (name, dtype): getattr(module, f"{name}_f{dtype[5:]}")
    for module, names in ((exp_log, ("exp", "expm1", "log", "log1p")),
                          (hyperbolic, ("tanh", "logistic")), (trig, ("sin", "cos")),
                          (erf, ("erf",)))
    for name in names for dtype in ("float64", "float32")}
_BY_NAME = {fn.__name__: fn for fn in SOURCES.values()}  # "tanh_f64" -> its plain function


def __getattr__(name: str):
    """The Numba functions, made on first use (`deferred.compile_all`, which imports Numba):
    `vecmath.tanh_f64`, as generated code and Numba code of one's own call it, and
    `FUNCTIONS`, all of them by (primitive, dtype)."""
    if name == "FUNCTIONS":
        value: object = {key: deferred.compiled(fn) for key, fn in SOURCES.items()}
    elif name in _BY_NAME:
        value = deferred.compiled(_BY_NAME[name])
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


if TYPE_CHECKING:
    FUNCTIONS: dict[tuple[str, str], Dispatcher]
