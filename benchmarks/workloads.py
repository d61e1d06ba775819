"""The benchmark workloads, each written once per contender (used by `bench_minijit.py`).

Contenders: NumPy eager, numexpr (where the workload can be written in it), hand-written
Numba (explicit loops, `error_model='numpy'`, serial or with `prange` on Numba's threads:
`hand_numba`), JAX `jit` on CPU (only where `import jax` works) and minijit (`mj.jit(...)`
on its default backend, "auto": LLVM or Numba by program). The traced programs are written
once against a `jax.numpy`-like module and used for both JAX and minijit: a JAX snippet runs
on minijit by changing the import.

`build_workloads(quick, parallel)` lists the workloads to time; NumPy eager's result is
every other contender's reference. The process's thread settings (BLAS, minijit, XLA) come
from its environment and `load_jax(one_core)`, set by the benchmark per mode. `memory_child`
measures the peak memory of one W1 call and `scale_child` the first call of a
`scale_program` of size K (each runs in a fresh process, started by the benchmark).
"""

from __future__ import annotations

import gc
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numba
import numexpr
import numpy as np

import minijit as mj
import minijit.numpy as mnp
from minijit import lax as mlax

CONTENDERS = ("numpy", "numexpr", "numba", "jax", "minijit")
LABELS = {"numpy": "NumPy", "numexpr": "numexpr", "numba": "Numba (hand)", "jax": "JAX jit",
          "minijit": "minijit"}

GELU_EXPR = "0.5*x*(1+tanh(0.7978845608*(x+0.044715*x**3)))"
NEWTON_STEPS = 20
MANDEL_ITERS = 100
LN_EPS = 1e-5  # layer norm's epsilon, added to the variance


def set_threads(n: int) -> None:
    """Threads for numexpr and for the parallel hand-written Numba loops (BLAS and XLA read
    theirs from the environment, set by the benchmark before this process started)."""
    numexpr.set_num_threads(n)
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


# --------------------------------------------------------------------------- NumPy eager


def gelu_numpy(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def softmax_numpy(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def dense_numpy(a, b, bias):
    return np.maximum(a @ b + bias, 0.0)


def newton_numpy(a):
    x = a
    for _ in range(NEWTON_STEPS):
        x = 0.5 * (x + a / x)
    return x


def mandelbrot_numpy(cr, ci):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(cr)
    n = np.zeros(cr.shape, np.int32)
    for _ in range(MANDEL_ITERS):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = (np.where(inside, zr * zr - zi * zi + cr, zr),
                  np.where(inside, 2.0 * zr * zi + ci, zi))
        n += inside
    return n


def affine_numpy(x):
    return 2.0 * x + 1.0


def mlp_numpy(x, w1, b1, w2, b2, w3, b3):
    h = np.tanh(x @ w1 + b1)
    h = np.tanh(h @ w2 + b2)
    return softmax_numpy(h @ w3 + b3)


def layer_norm_numpy(x, gamma, beta):
    mean = np.mean(x, axis=1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * gamma + beta


def attention_numpy(q, k, v):
    s = q @ k.T / math.sqrt(q.shape[1])
    e = np.exp(s - np.max(s, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True) @ v


def copy_numpy(x, out):
    np.copyto(out, x)
    return out


def jacobi_numpy(u, f, h2, tol, max_iters):
    k, change = 0, np.inf
    while change >= tol and k < max_iters:
        new = u.copy()  # the two boundary values stay as they are
        new[1:-1] = 0.5 * (u[:-2] + u[2:] + h2 * f[1:-1])
        k, change, u = k + 1, np.max(np.abs(new - u)), new
    return u


# --------------------------------------------------------------------------- numexpr
# One thread (see set_threads), like the hand-written Numba it is compared with.

_GELU_CONSTANTS = {"c_half": 0.5, "c_one": 1.0, "c_k0": 0.7978845608, "c_k1": 0.044715}
_GELU_NE = "c_half*x*(c_one+tanh(c_k0*(x+c_k1*x**3)))"


def gelu_numexpr(x):
    # numexpr computes Python float constants in float64; typed constants keep float32 data
    # in float32, as NumPy does.
    consts = {k: x.dtype.type(v) for k, v in _GELU_CONSTANTS.items()}
    return numexpr.evaluate(_GELU_NE, local_dict={"x": x, **consts})


def softmax_numexpr(x):
    # numexpr has no max reduction and reduces only the whole expression: partly NumPy.
    m = np.max(x, axis=1, keepdims=True)
    e = numexpr.evaluate("exp(x - m)", local_dict={"x": x, "m": m})
    s = np.sum(e, axis=1, keepdims=True)
    return numexpr.evaluate("e / s", local_dict={"e": e, "s": s})


def affine_numexpr(x):
    return numexpr.evaluate("2.0 * x + 1.0", local_dict={"x": x})


# --------------------------------------------------------------------------- hand-written Numba
# Explicit loops, each written once with `numba.prange` where its outer loop is parallel, and
# compiled twice: serial (`prange` is then `range`) for the one-core mode, `parallel=True`
# for the all-cores mode. Large outputs are allocated by NumPy outside the compiled code, as
# minijit does (memory Numba allocates inside faults in 4 KiB pages, ~30 ms per 80 MB).
# Only the serial twins are cached on disk: Numba's cache key does not include
# `parallel=True`, so a cached serial twin would answer for the parallel one.

_njit = numba.njit(error_model="numpy", cache=True)
_njit_parallel = numba.njit(error_model="numpy", parallel=True)


@_njit
def _gelu_loop(x, out):
    half, one = x.dtype.type(0.5), x.dtype.type(1.0)  # constants in the data's precision
    k0, k1 = x.dtype.type(0.7978845608), x.dtype.type(0.044715)
    for i in numba.prange(x.size):
        v = x[i]
        out[i] = half * v * (one + np.tanh(k0 * (v + k1 * (v * v * v))))


@_njit
def _copy_loop(x, out):
    for i in numba.prange(x.size):
        out[i] = x[i]


@_njit
def _softmax_loop(x, out):
    rows, cols = x.shape
    for i in numba.prange(rows):
        m = -np.inf
        for j in range(cols):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(cols):
            e = np.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        for j in range(cols):
            out[i, j] = out[i, j] / s


@_njit
def _dense(a, b, bias):
    c = np.dot(a, b)  # BLAS, as everyone else uses; the loop adds the bias and the ReLU
    rows, cols = c.shape
    for i in numba.prange(rows):
        for j in range(cols):
            c[i, j] = max(c[i, j] + bias[j], 0.0)
    return c


@_njit
def _newton_loop(a, out):
    for i in numba.prange(a.size):
        ai = a[i]
        x = ai
        for _ in range(NEWTON_STEPS):
            x = 0.5 * (x + ai / x)
        out[i] = x


@_njit
def _mandelbrot(cr, ci):
    rows, cols = cr.shape
    out = np.empty((rows, cols), np.int32)
    for i in numba.prange(rows):
        for j in range(cols):
            c_r, c_i = cr[i, j], ci[i, j]
            zr = zi = 0.0
            n = 0
            for _ in range(MANDEL_ITERS):
                if zr * zr + zi * zi > 4.0:
                    break
                zr, zi = zr * zr - zi * zi + c_r, 2.0 * zr * zi + c_i
                n += 1
            out[i, j] = n
    return out


@_njit
def _mlp_loop(x, w1, b1, w2, b2, w3, b3, out):
    # The products are BLAS (np.dot), as for everyone; bias, tanh and the softmax are loops.
    h = np.dot(x, w1)
    for i in numba.prange(h.shape[0]):
        for j in range(h.shape[1]):
            h[i, j] = np.tanh(h[i, j] + b1[j])
    h2 = np.dot(h, w2)
    for i in numba.prange(h2.shape[0]):
        for j in range(h2.shape[1]):
            h2[i, j] = np.tanh(h2[i, j] + b2[j])
    z = np.dot(h2, w3)
    for i in numba.prange(z.shape[0]):
        m = -np.inf
        for j in range(z.shape[1]):
            z[i, j] += b3[j]
            m = max(m, z[i, j])
        s = z.dtype.type(0.0)  # accumulate in the data's precision, as the others do
        for j in range(z.shape[1]):
            e = np.exp(z[i, j] - m)
            out[i, j] = e
            s += e
        for j in range(z.shape[1]):
            out[i, j] = out[i, j] / s


@_njit
def _layer_norm_loop(x, gamma, beta, eps, out):
    # Mean and variance over axis 1 (T) for each (b, d): the sums run along rows of D
    # contiguous elements, one batch entry per task.
    batch, steps, width = x.shape
    for b in numba.prange(batch):
        mean = np.zeros(width)
        var = np.zeros(width)
        for t in range(steps):
            for d in range(width):
                mean[d] += x[b, t, d]
        for d in range(width):
            mean[d] /= steps
        for t in range(steps):
            for d in range(width):
                c = x[b, t, d] - mean[d]
                var[d] += c * c
        for d in range(width):
            var[d] = 1.0 / np.sqrt(var[d] / steps + eps)
        for t in range(steps):
            g, s = gamma[t, 0], beta[t, 0]
            for d in range(width):
                out[b, t, d] = (x[b, t, d] - mean[d]) * var[d] * g + s


@_njit
def _attention(q, k, v):
    s = np.dot(q, k.T)  # BLAS; the scaled row-wise softmax is the loop
    scale = 1.0 / np.sqrt(q.shape[1])
    rows, cols = s.shape
    for i in numba.prange(rows):
        m = -np.inf
        for j in range(cols):
            s[i, j] *= scale
            m = max(m, s[i, j])
        total = 0.0
        for j in range(cols):
            e = np.exp(s[i, j] - m)
            s[i, j] = e
            total += e
        for j in range(cols):
            s[i, j] /= total
    return np.dot(s, v)


@_njit
def _jacobi_loop(u0, f, h2, tol, max_iters, out):
    # Serial in both modes: each of the thousands of steps is a loop over 1000 points that
    # ends in a max-reduction, too little work per step to pay for starting threads.
    u = u0.copy()
    out[:] = u0  # two buffers swapped each step; the boundary values are in both from the start
    n, k, change = u.size, 0, np.inf
    while change >= tol and k < max_iters:
        change = 0.0
        for i in range(1, n - 1):
            v = 0.5 * (u[i - 1] + u[i + 1] + h2 * f[i])
            change = max(change, abs(v - u[i]))
            out[i] = v
        u, out = out, u
        k += 1
    return u  # after the last swap the newest values are in `u`


@_njit
def affine_numba(x):
    out = np.empty_like(x)  # tiny arrays, one thread: allocating inside is the cheapest call
    for i in range(x.size):
        out[i] = 2.0 * x[i] + 1.0
    return out


_PARALLEL_TWINS: dict = {}


def _kernel(serial, parallel: bool):
    """`serial`'s dispatcher, or its parallel twin (compiled from the same Python function)."""
    if not parallel:
        return serial
    if serial not in _PARALLEL_TWINS:
        _PARALLEL_TWINS[serial] = _njit_parallel(serial.py_func)
    return _PARALLEL_TWINS[serial]


def hand_numba(parallel: bool) -> dict[str, Callable]:
    """The hand-written versions, serial or with their parallel loops on Numba's threads."""

    def k(serial):
        return _kernel(serial, parallel)

    def with_out(kernel, shape_of=lambda *a: a[0]):
        def run(*args):
            out = np.empty_like(shape_of(*args))
            kernel(*args, out)
            return out
        return run

    def mlp(x, w1, b1, w2, b2, w3, b3):
        out = np.empty((x.shape[0], w3.shape[1]), x.dtype)
        k(_mlp_loop)(x, w1, b1, w2, b2, w3, b3, out)
        return out

    def layer_norm(x, gamma, beta):
        out = np.empty_like(x)
        k(_layer_norm_loop)(x, gamma, beta, LN_EPS, out)
        return out

    def jacobi(u0, f, h2, tol, max_iters):
        return _jacobi_loop(u0, f, float(h2), float(tol), int(max_iters), np.empty_like(u0))

    def copy(x, out):
        k(_copy_loop)(x, out)
        return out

    return {"gelu": with_out(k(_gelu_loop)), "softmax": with_out(k(_softmax_loop)),
            "dense": k(_dense), "newton": with_out(k(_newton_loop)),
            "mandelbrot": k(_mandelbrot), "mlp": mlp, "layer_norm": layer_norm,
            "attention": k(_attention), "jacobi": jacobi, "affine": affine_numba,
            "copy": copy}


def gelu_numba(x):
    """The serial hand-written GELU (the peak-memory and first-call measurements use it)."""
    out = np.empty_like(x)
    _gelu_loop(x, out)
    return out


# --------------------------------------------------------------------------- traced programs
# Written once against a jax.numpy-like module `xnp` and its `lax`: minijit and JAX both use
# them.


def traced_programs(xnp, xlax) -> dict[str, Callable]:
    def gelu(x):
        return 0.5 * x * (1 + xnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    def softmax(x):
        e = xnp.exp(x - xnp.max(x, axis=1, keepdims=True))
        return e / xnp.sum(e, axis=1, keepdims=True)

    def dense(a, b, bias):
        return xnp.maximum(a @ b + bias, 0.0)

    def newton(a):
        return xlax.fori_loop(0, NEWTON_STEPS, lambda i, x: 0.5 * (x + a / x), a)

    def mandelbrot(cr, ci):
        def body(i, state):
            zr, zi, n = state
            inside = zr * zr + zi * zi <= 4.0
            return (xnp.where(inside, zr * zr - zi * zi + cr, zr),
                    xnp.where(inside, 2.0 * zr * zi + ci, zi),
                    n + inside.astype(np.int32))

        z = xnp.zeros_like(cr)
        return xlax.fori_loop(0, MANDEL_ITERS, body, (z, z, xnp.zeros(cr.shape, np.int32)))[2]

    def affine(x):
        return 2.0 * x + 1.0

    def mlp(x, w1, b1, w2, b2, w3, b3):
        h = xnp.tanh(x @ w1 + b1)
        h = xnp.tanh(h @ w2 + b2)
        return softmax(h @ w3 + b3)

    def layer_norm(x, gamma, beta):
        # x is (B, T, D), normalized over T; gamma and beta are (T, 1): one value per step,
        # broadcast along B and D
        mean = xnp.mean(x, axis=1, keepdims=True)
        var = xnp.mean((x - mean) ** 2, axis=1, keepdims=True)
        return (x - mean) / xnp.sqrt(var + LN_EPS) * gamma + beta

    def attention(q, k, v):
        return softmax(q @ k.T / math.sqrt(q.shape[1])) @ v

    def jacobi(u0, f, h2, tol, max_iters):
        def not_done(state):
            k, change, _ = state
            return (change >= tol) & (k < max_iters)

        def step(state):
            k, _, u = state
            inner = 0.5 * (u[:-2] + u[2:] + h2 * f[1:-1])
            new = xnp.concatenate([u[:1], inner, u[-1:]])  # the boundary values are kept
            return k + 1, xnp.max(xnp.abs(new - u)), new

        init = (xnp.asarray(0, max_iters.dtype), xnp.asarray(np.inf, u0.dtype), u0)
        return xlax.while_loop(not_done, step, init)[2]

    return {"gelu": gelu, "softmax": softmax, "dense": dense, "newton": newton,
            "mandelbrot": mandelbrot, "affine": affine, "mlp": mlp, "jacobi": jacobi,
            "layer_norm": layer_norm, "attention": attention}


MINIJIT_PROGRAMS = traced_programs(mnp, mlax)
MINIJIT = {k: mj.jit(f) for k, f in MINIJIT_PROGRAMS.items()}  # the default backend, "auto"


# --------------------------------------------------------------------------- JAX (optional)

_jax_state: dict[str, Any] = {}


def load_jax(one_core: bool = False):
    """`(jax, None)` if JAX imports, else `(None, reason)`; CPU only, float64 enabled.

    `one_core`: XLA's threads all run on one CPU. No `XLA_FLAGS` of JAX 0.10.2 does that
    (benchmarks/README.md); a thread starts with its creator's CPU affinity, so the calling
    thread is pinned to one CPU while XLA's CPU backend starts its threads (and runs one
    computation, in case a pool starts late), then given its CPUs back: the rest of the
    process is not pinned."""
    if "jax" not in _jax_state:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        cpus = os.sched_getaffinity(0) if one_core else None
        try:
            if cpus:
                os.sched_setaffinity(0, {min(cpus)})
            import jax

            jax.config.update("jax_enable_x64", True)
            jax.config.update("jax_platforms", "cpu")
            if cpus:
                jax.block_until_ready(jax.jit(lambda v: v * 2.0)(np.ones(1 << 16)))
            _jax_state.update(jax=jax, reason=None)
        except Exception as e:  # not installed, or broken: skip it, say why
            _jax_state.update(jax=None, reason=f"{type(e).__name__}: {e}")
        finally:
            if cpus:
                os.sched_setaffinity(0, cpus)
    return _jax_state["jax"], _jax_state["reason"]


def jax_programs() -> dict[str, Callable] | None:
    jax, _ = load_jax()
    if jax is None:
        return None
    if "programs" not in _jax_state:
        import jax.numpy as jnp

        _jax_state["programs"] = {k: jax.jit(f) for k, f in
                                  traced_programs(jnp, jax.lax).items()}
    return _jax_state["programs"]


# --------------------------------------------------------------------------- workloads


@dataclass
class Impl:
    """One contender's version: `fn(*prepared)`, where `prepared = prepare(inputs)` is done
    once before timing (JAX moves the inputs to its device there) and `finish` waits for the
    result (JAX dispatches asynchronously)."""

    fn: Callable
    prepare: Callable[[tuple], tuple] = tuple
    finish: Callable[[Any], Any] = lambda r: r
    note: str = ""

    def bind(self, inputs: tuple) -> Callable[[], Any]:
        args = self.prepare(inputs)
        fn, finish = self.fn, self.finish
        return lambda: finish(fn(*args))


@dataclass
class Workload:
    group: str  # "W1", "COPY", "LN", ...: what --only selects
    name: str  # row label
    size: str  # what varies with --quick
    make_inputs: Callable[[], tuple]
    impls: dict[str, Impl | None]  # None: not expressible for this contender
    rtol: float = 1e-9
    atol: float = 0.0
    exact_fraction: float | None = None  # integer results: allowed fraction of differences
    param: float | None = None  # the x value of a plot (W1: n)
    meta: dict = field(default_factory=dict)

    def check(self, expected, got) -> str | None:
        """None if `got` matches NumPy's `expected`, else what is wrong."""
        got = np.asarray(got)
        if got.shape != expected.shape or got.dtype != expected.dtype:
            return (f"got {got.dtype}{list(got.shape)}, expected "
                    f"{expected.dtype}{list(expected.shape)}")
        if self.exact_fraction is not None:
            wrong = float(np.mean(got != expected))
            return None if wrong <= self.exact_fraction else f"{wrong:.2%} of elements differ"
        if np.allclose(got, expected, rtol=self.rtol, atol=self.atol, equal_nan=True):
            return None
        err = np.max(np.abs(got.astype(np.float64) - expected) /
                     (self.atol + self.rtol * np.abs(expected.astype(np.float64))))
        return f"error {err:.3g}x the tolerance"


def _jax_impl(name: str) -> Impl | None:
    progs = jax_programs()
    if progs is None:
        return None
    import jax

    return Impl(progs[name], prepare=lambda inputs: tuple(jax.device_put(a) for a in inputs),
                finish=lambda r: r.block_until_ready())


def _impls(hand: dict, numpy_fn, numexpr_fn, name: str, numexpr_note: str = "") -> dict:
    return {
        "numpy": Impl(numpy_fn),
        "numexpr": Impl(numexpr_fn, note=numexpr_note) if numexpr_fn else None,
        "numba": Impl(hand[name]),
        "jax": _jax_impl(name),
        "minijit": Impl(MINIJIT[name]),
    }


def gelu_inputs(n: int, dtype) -> tuple:
    rng = np.random.default_rng(1)
    return ((2.0 * rng.standard_normal(n)).astype(dtype),)


MLP_WIDTH = 512  # input features and hidden units; 10 outputs
MLP_CLASSES = 10


def mlp_inputs(rows: int, dtype) -> tuple:
    """A batch and three dense layers, scaled so that the tanh units are not saturated."""
    rng = np.random.default_rng(5)

    def layer(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)).astype(dtype), (
            0.1 * rng.standard_normal(n_out)).astype(dtype)

    x = rng.standard_normal((rows, MLP_WIDTH)).astype(dtype)
    return (x, *layer(MLP_WIDTH, MLP_WIDTH), *layer(MLP_WIDTH, MLP_WIDTH),
            *layer(MLP_WIDTH, MLP_CLASSES))


JACOBI_TOL = 1e-12


def jacobi_inputs(n: int, max_iters: int) -> tuple:
    """-u'' = f on [0, 1] with u(0) = 1, u(1) = 2, from u = 0 inside. Jacobi converges slowly
    (the change shrinks by about 1 - 5/n^2 a step), so the iteration count is what stops it
    at these sizes; the convergence test still runs every step, as it would in a real solver.
    The scalars are 0-d arrays: one compiled program serves any tolerance or count."""
    u0 = np.zeros(n)
    u0[0], u0[-1] = 1.0, 2.0
    f = np.sin(np.linspace(0.0, np.pi, n))
    return (u0, f, np.asarray(1.0 / (n - 1) ** 2), np.asarray(JACOBI_TOL),
            np.asarray(max_iters, np.int64))


def _exp10(n: int) -> str:
    e = round(math.log10(n))
    return f"1e{e}" if 10**e == n else str(n)


def layer_norm_inputs(batch: int, steps: int, width: int) -> tuple:
    rng = np.random.default_rng(6)
    return (rng.standard_normal((batch, steps, width)),
            1.0 + 0.1 * rng.standard_normal((steps, 1)), 0.1 * rng.standard_normal((steps, 1)))


def attention_inputs(steps: int, d: int) -> tuple:
    rng = np.random.default_rng(7)
    return tuple(rng.standard_normal((steps, d)) for _ in range(3))


def _own_output(inputs: tuple) -> tuple:
    """The copy's input and an output buffer of this contender's own, allocated once."""
    return inputs[0], np.empty_like(inputs[0])


def build_workloads(quick: bool = False, parallel: bool = False) -> list[Workload]:
    """The timed workloads; `parallel`: the hand-written Numba loops run on Numba's threads."""
    hand = hand_numba(parallel)
    sizes = [10**3, 10**4, 10**5] if quick else [10**k for k in range(3, 8)]
    rows, cols = (256, 1024) if quick else (4096, 1024)
    m = 128 if quick else 512
    newton_n = 10**4 if quick else 10**5
    grid = 100 if quick else 400
    mlp_rows = 64 if quick else 256
    jacobi_n, jacobi_iters = (200, 500) if quick else (1000, 5000)
    ln_shape = (2, 128, 64) if quick else (8, 512, 256)
    att_steps, att_d = (128, 32) if quick else (512, 64)
    out = []
    for dtype, tol in ((np.float64, dict(rtol=1e-10, atol=1e-12)),
                       (np.float32, dict(rtol=1e-5, atol=1e-5))):
        for n in sizes:
            out.append(Workload(
                "W1", f"GELU {np.dtype(dtype).name}", f"n={_exp10(n)}",
                lambda n=n, dtype=dtype: gelu_inputs(n, dtype),
                _impls(hand, gelu_numpy, gelu_numexpr, "gelu"), param=n,
                meta={"dtype": np.dtype(dtype).name}, **tol))
        if dtype is np.float64:
            # The physical limit of W1 at its largest n: reading its input and writing as many
            # bytes, with nothing computed (NumPy's copyto into a buffer allocated once).
            n = sizes[-1]
            out.append(Workload(
                "COPY", "copy of W1's input (the limit)", f"n={_exp10(n)}",
                lambda n=n: gelu_inputs(n, np.float64),
                {"numpy": Impl(copy_numpy, prepare=_own_output, note="np.copyto"),
                 "numexpr": None, "jax": None, "minijit": None,
                 "numba": Impl(hand["copy"], prepare=_own_output)},
                rtol=0.0, param=n, meta={"dtype": "float64"}))

    def softmax_inputs():
        return (np.random.default_rng(2).standard_normal((rows, cols)),)

    out.append(Workload("W2", "row-wise softmax", f"{rows}x{cols}", softmax_inputs,
                        _impls(hand, softmax_numpy, softmax_numexpr, "softmax",
                               "max and sum in NumPy"), rtol=1e-9, atol=1e-15))

    def dense_inputs():
        rng = np.random.default_rng(3)
        return (rng.standard_normal((m, m)), rng.standard_normal((m, m)),
                rng.standard_normal(m))

    out.append(Workload("W3", "relu(A @ B + b)", f"{m}x{m}", dense_inputs,
                        _impls(hand, dense_numpy, None, "dense"), rtol=1e-9, atol=1e-9))

    def newton_inputs():
        return (np.random.default_rng(4).uniform(1.0, 100.0, newton_n),)

    out.append(Workload("W4", f"Newton sqrt, {NEWTON_STEPS} steps (fori_loop)",
                        f"n={_exp10(newton_n)}", newton_inputs,
                        _impls(hand, newton_numpy, None, "newton"), rtol=1e-12))

    def mandel_inputs():
        ci, cr = np.mgrid[-1.25:1.25:grid * 1j, -2.0:0.5:grid * 1j]
        return np.ascontiguousarray(cr), np.ascontiguousarray(ci)

    out.append(Workload("W4", f"Mandelbrot, <= {MANDEL_ITERS} iterations",
                        f"{grid}x{grid}", mandel_inputs,
                        _impls(hand, mandelbrot_numpy, None, "mandelbrot"),
                        exact_fraction=1e-3))

    for dtype, tol in ((np.float64, dict(rtol=1e-9, atol=1e-12)),
                       (np.float32, dict(rtol=2e-4, atol=1e-6))):
        out.append(Workload(
            "W7", f"MLP forward {np.dtype(dtype).name}",
            f"{mlp_rows}x{MLP_WIDTH}", lambda dtype=dtype: mlp_inputs(mlp_rows, dtype),
            _impls(hand, mlp_numpy, None, "mlp"), meta={"dtype": np.dtype(dtype).name},
            **tol))

    out.append(Workload("LN", "layer norm over axis 1, float64",
                        "x".join(map(str, ln_shape)), lambda: layer_norm_inputs(*ln_shape),
                        _impls(hand, layer_norm_numpy, None, "layer_norm"),
                        rtol=1e-9, atol=1e-12))
    out.append(Workload("ATT", "attention softmax(Q K^T / sqrt(d)) V, float64",
                        f"T={att_steps}, d={att_d}", lambda: attention_inputs(att_steps, att_d),
                        _impls(hand, attention_numpy, None, "attention"),
                        rtol=1e-9, atol=1e-12))

    out.append(Workload("W8", "Jacobi solver (while_loop)",
                        f"n={jacobi_n}, <= {jacobi_iters} iterations",
                        lambda: jacobi_inputs(jacobi_n, jacobi_iters),
                        _impls(hand, jacobi_numpy, None, "jacobi"),
                        rtol=1e-9, atol=1e-12))

    out.append(Workload("W5", "cached call, y = 2x + 1", "n=10",
                        lambda: (np.linspace(-1.0, 1.0, 10),),
                        _impls(hand, affine_numpy, affine_numexpr, "affine"),
                        rtol=1e-12))
    return out


# --------------------------------------------------------------------------- peak memory

W1_MEMORY_IMPLS = {"numpy": gelu_numpy, "numexpr": gelu_numexpr, "numba": gelu_numba,
                   "minijit": MINIJIT["gelu"]}


def _status_kib(field_name: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise KeyError(field_name)


def _reset_peak() -> bool:
    """Reset this process's peak RSS (Linux: clear_refs 5); False where that is impossible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_child(contender: str, n: int) -> dict:
    """Peak memory of one W1 call (GELU float64) beyond what was resident before it.

    Runs in a fresh process. The function is called once at full size first (compiling,
    faulting in code and libraries), then the peak RSS is reset and the measured call made.
    Where the peak cannot be reset, `ru_maxrss` before and after a first call is used, which
    then includes compiling."""
    import resource

    (x,) = gelu_inputs(n, np.float64)
    if contender == "jax":
        progs = jax_programs()
        if progs is None:
            return {"skipped": _jax_state["reason"]}
        import jax

        xd = jax.device_put(x)

        def fn(_):
            return progs["gelu"](xd).block_until_ready()
    else:
        fn = W1_MEMORY_IMPLS[contender]
    method = "VmHWM after reset"
    if os.path.exists("/proc/self/clear_refs") and _reset_peak():
        y = fn(x)
        del y
        gc.collect()
        before = _status_kib("VmRSS")
        _reset_peak()
        y = fn(x)
        peak = _status_kib("VmHWM")
    else:
        method = "ru_maxrss (includes the first call's compile)"
        fn(np.ones(8))  # compile for a small size at least
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        y = fn(x)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"peak_extra_bytes": (peak - before) * 1024, "out_bytes": int(np.asarray(y).nbytes),
            "in_bytes": int(x.nbytes), "method": method}


# --------------------------------------------------------------------------- compile scaling
# Programs of growing size K, written once against `xnp`/`xlax` like `traced_programs`; the
# NumPy reference runs the same text eagerly with `EagerLax`.

SCALE_N = 1000  # elements of the input: small, the first call's compile is what is measured


class EagerLax:
    """The three control-flow primitives of `lax`, run by Python on NumPy values."""

    @staticmethod
    def while_loop(cond_fun, body_fun, init):
        state = init
        while cond_fun(state):
            state = body_fun(state)
        return state

    @staticmethod
    def fori_loop(lower, upper, body_fun, init):
        state = init
        for i in range(lower, upper):
            state = body_fun(i, state)
        return state

    @staticmethod
    def cond(pred, true_fun, false_fun, *operands):
        return true_fun(*operands) if pred else false_fun(*operands)


def scale_program(xnp, xlax, case: str, k: int) -> Callable:
    """`chain`: K elementwise ops in a row; `outputs`: K outputs that each read the input;
    `nested`: control flow K levels deep (while_loop > cond > fori_loop > while_loop ...)."""
    if case == "chain":
        def chain(x):
            # a cycle of three ops that no optimizer folds together: scale, shift, sine
            for j in range(k):
                x = x * 1.0001 if j % 3 == 0 else x + 0.001 if j % 3 == 1 else xnp.sin(x)
            return x
        return chain
    if case == "outputs":
        def outputs(x):
            return [x * (1.0 + j / k) + j for j in range(k)]
        return outputs
    if case == "nested":
        def level(depth: int, v):
            if depth == 0:
                return xnp.sin(v) * 0.5 + 0.25
            kind = ("while", "cond", "fori")[(k - depth) % 3]
            if kind == "while":
                def not_done(s):
                    return s[0] < 4

                def step(s):
                    return s[0] + 1, level(depth - 1, s[1])
                return xlax.while_loop(not_done, step, (xnp.asarray(0), v))[1]
            if kind == "cond":
                return xlax.cond(xnp.max(v) > 0.0, lambda u: level(depth - 1, u),
                                 lambda u: u * 0.9, v)
            return xlax.fori_loop(0, 3, lambda i, u: level(depth - 1, u), v)

        def nested(x):
            return level(k, x)
        return nested
    raise ValueError(case)


# --quick runs one K per program: it checks that each runs and is right, not how it scales
# (each K is two fresh processes, which cost seconds in imports alone).
SCALE_CASES = {  # case: (what K means, full-run K, --quick K)
    "chain": ("K elementwise ops in a chain", (10, 100, 1000, 5000), (100,)),
    "outputs": ("K outputs `x * c_k + k`, each reading x", (10, 100, 1000), (10,)),
    "nested": ("control flow K deep: while_loop > cond > fori_loop", (1, 2, 3), (3,)),
}


def scale_child(contender: str, case: str, k: int) -> dict:
    """The first call of a `scale_program` in this fresh process: its time, minijit's stages,
    the peak rise of resident memory during it (compiling included) and a check against
    NumPy. minijit's disk cache is pointed at an empty folder by the caller; JAX's
    persistent compilation cache is off unless configured."""
    import time

    x = np.linspace(-1.0, 1.0, SCALE_N)
    expected = scale_program(np, EagerLax, case, k)(x)
    if contender == "jax":
        jax, reason = load_jax()
        if jax is None:
            return {"skipped": reason}
        import jax.numpy as jnp

        fn = jax.jit(scale_program(jnp, jax.lax, case, k))
        arg = jax.device_put(x)
        # Like Numba's below, JAX's one-off start (the CPU client, the first jit) is not part
        # of the first call measured.
        jax.block_until_ready(jax.jit(lambda v: v + 1.0)(arg))

        def call():
            return jax.block_until_ready(fn(arg))
    else:
        import minijit.codegen.compile  # noqa: F401  Numba's import is not part of the first call

        # "minijit": jit's default backend ("auto"); "minijit-numba": the Numba backend
        backend = "numba" if contender == "minijit-numba" else None
        fn = mj.jit(scale_program(mnp, mlax, case, k), backend=backend)
        numba.njit(lambda v: v + 1.0)(1.0)  # nor is Numba's one-off initialisation
        import minijit.llvm  # noqa: F401  nor importing llvmlite's binding

        def call():
            return fn(x)
    gc.collect()
    reset = os.path.exists("/proc/self/clear_refs") and _reset_peak()
    before = _status_kib("VmRSS") if reset else _maxrss_kib()
    t0 = time.perf_counter()
    got = call()
    first = time.perf_counter() - t0
    peak = _status_kib("VmHWM") if reset else _maxrss_kib()
    got_list = got if isinstance(got, list | tuple) else [got]
    want_list = expected if isinstance(expected, list) else [expected]
    ok = len(got_list) == len(want_list) and all(
        np.allclose(np.asarray(g), w, rtol=1e-9, atol=1e-12) for g, w in zip(got_list, want_list))
    out = {"first_call": first, "peak_rise_bytes": max(0, peak - before) * 1024, "ok": ok,
           "memory_method": "VmHWM after reset" if reset else "ru_maxrss"}
    if contender.startswith("minijit"):
        entry = fn.cache_entries()[0]
        out["stages"] = entry.timings
        out["llvm_declined"] = getattr(entry.executable, "llvm_declined", None)
    return out


def _maxrss_kib() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


if __name__ == "__main__":  # used by the benchmark, each in a fresh process:
    # python workloads.py --memory CONTENDER N; python workloads.py --scale CONTENDER CASE K
    import sys

    set_threads(1)
    if len(sys.argv) == 4 and sys.argv[1] == "--memory":
        print(json.dumps(memory_child(sys.argv[2], int(sys.argv[3]))))
    elif len(sys.argv) == 5 and sys.argv[1] == "--scale":
        print(json.dumps(scale_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        sys.exit("usage: python workloads.py --memory CONTENDER N | "
                 "--scale CONTENDER CASE K")
