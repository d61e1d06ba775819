"""Programs the build-track exercises run a learner's piece on (chapter 02 onwards).

A build-track exercise (``ex02_process_primitive``, ``ex03_eval_jaxpr``, ...) grades a piece of
minijit that the learner wrote by running these programs through minijit with the piece
switched in (``minijit.build.use``) and comparing with minijit's own piece, one case per
program. The grader cannot import ``tests/``, so this is a catalogue of its own, smaller than
``tests/catalogue.py`` but with a program for each thing a piece must get right: literals,
constants, several and unread outputs, every kind of parameter, and ``cond``, ``while_loop``,
``fori_loop``, ``scan`` and nested ``jit``, whose impl rules call ``eval_jaxpr`` again.
``CONTROL_FLOW`` holds the control-flow programs (chapter 05), with bodies that capture values.

``PROGRAMS[name]`` (and ``CONTROL_FLOW[name]``) is ``(fun, make_args)``: ``make_args(rng)``
returns the positional arguments (arrays and Python scalars). Probes import this module
inside their body.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import minijit as mj
import minijit.numpy as mnp
from minijit import lax

_W = np.array([0.5, -1.0, 2.0])  # captured by `scale_shift`: a constvar of its jaxpr


def _normal(*shapes, dtype=np.float64):
    return lambda rng: tuple(rng.standard_normal(s).astype(dtype) for s in shapes)


def _ints(*shapes):
    return lambda rng: tuple(rng.integers(-9, 10, s).astype(np.int64) for s in shapes)


def _chain(x):
    for k in range(30):  # more than 26 variables: names go on to ba, bb, ...
        x = x * 0.5 + float(k)
    return x


def _unread(x):
    _, i = lax.scan(lambda c, v: (c + 1, c * v), 0.0, x)  # the final carry is never read
    return i


def _doublings(x, limit):
    def cond(c):
        return c[1] < limit

    def body(c):
        return c[0] * 2.0, c[1] + 1

    return lax.while_loop(cond, body, (x, 0))


@mj.jit
def _inner(x, y):
    return mnp.sin(x) * y


def _nested(x, y):
    return _inner(x, y) + _inner(y, x)


def _switch(i, x):
    return lax.switch(i, [lambda v: v + 1.0, lambda v: v * v, lambda v: -v], x)


def _cond_in_loop(x):
    def body(i, v):
        return lax.cond(i % 2 == 0, lambda u: u * 2.0, lambda u: u - 1.0, v)

    return lax.fori_loop(0, 4, body, x)


def _traced_loop(x, n):
    return lax.fori_loop(0, n, lambda i, v: v + i, x)


# Captured values (closure conversion, chapter 05): arrays and tracers, one value captured by
# both branches, and branches nested in loops, which capture from two traces out.


def _cond_captures_array(x):  # both branches capture the NumPy array _W
    return lax.cond(mnp.sum(x) > 0, lambda v: v * _W, lambda v: v + _W, x)


def _cond_captures_tracers(x, y, s):  # both capture y; the second captures x first
    return lax.cond(s > 0, lambda v: v * y, lambda v: v - x * y, x)


def _switch_captures(i, x, a, b):  # each branch captures another subset of (a, b)
    return lax.switch(i, [lambda v: v + a, lambda v: v * b - a, lambda v: -v, lambda v: b], x)


def _while_captures(x, limit, step):  # cond captures limit, body captures step and _W
    def body(c):
        return c[0] + step * _W, c[1] + 1

    return lax.while_loop(lambda c: mnp.sum(c[0]) < limit, body, (x, 0))


def _scan_captures(xs, c, w):  # the body captures a tracer and an array
    return lax.scan(lambda c, v: (c * w + v, c - _W), c, xs)


def _cond_in_while(x, y):  # both branches capture y, from two traces out
    def body(c):
        v, k = c
        v = lax.cond(mnp.sum(v) > 0, lambda u: u - y, lambda u: u * 0.5 + y, v)
        return v, k + 1

    return lax.while_loop(lambda c: c[1] < 5, body, (x, 0))


def _nested_loops(x, y):  # a while in a fori_loop, a cond in the while: three levels
    def outer(i, v):
        def inner(c):
            u, k = c
            u = lax.cond(k % 2 == 0, lambda t: t + y * i, lambda t: t - x, u)
            return u, k + 1

        return lax.while_loop(lambda c: c[1] < i, inner, (v, 0))[0]

    return lax.fori_loop(0, 4, outer, y)


PROGRAMS: dict[str, tuple[Callable, Callable]] = {
    "add_literal": (lambda x: x + 1.0, _normal((3,))),
    "mul_two_args": (lambda x, y: x * y, _normal((2, 3), (2, 3))),
    "sin_cos": (lambda x: mnp.sin(x) * mnp.cos(x), _normal((4,))),
    "scale_shift": (lambda x: x * _W + 1.0, _normal((3,))),
    "two_outputs": (lambda x: (x + 1.0, x * 2.0), _normal((3,))),
    "output_is_input": (lambda x, y: (x, y - x), _normal((2,), (2,))),
    "int_arith": (lambda a, b: (a * 3 - b, a // 2, a % 4), _ints((5,), (5,))),
    "compare": (lambda x, y: x < y, _normal((4,), (4,))),
    "exp_log": (lambda x: mnp.log1p(mnp.exp(x)), _normal((3,))),
    "sum_axes": (lambda x: mnp.sum(x, axis=0), _normal((3, 4))),
    "sum_all": (lambda x: mnp.sum(x), _normal((2, 3))),
    "max_and_argmax": (lambda x: (mnp.max(x), mnp.argmax(x)), _normal((6,))),
    "mean": (lambda x: mnp.mean(x, axis=1), _normal((2, 5))),
    "astype": (lambda x: x.astype(mnp.int32), _normal((4,))),
    "reshape_transpose": (lambda x: x.reshape(2, 3).T, _normal((6,))),
    "slice_index": (lambda x: (x[1], x[1:3]), _normal((4,))),
    "traced_index": (lambda x, i: x[i], lambda rng: (rng.standard_normal(5), 3)),
    "at_set": (lambda x: x.at[0].set(2.0), _normal((3,))),
    "concat": (lambda x, y: mnp.concatenate([x, y]), _normal((2,), (3,))),
    "iota": (lambda x: x + mnp.arange(4.0), _normal((4,))),
    "where": (lambda x: mnp.where(x > 0, x, 0.0), _normal((5,))),
    "dot": (lambda x, y: mnp.dot(x, y), _normal((2, 3), (3, 2))),
    "softmax": (lambda x: mnp.exp(x) / mnp.sum(mnp.exp(x)), _normal((4,))),
    "long_chain": (_chain, _normal((2,))),
    "cond": (lambda x: lax.cond(mnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x),
             _normal((3,))),
    "switch": (_switch, lambda rng: (int(rng.integers(0, 3)), rng.standard_normal(3))),
    "while_loop": (_doublings, lambda rng: (rng.standard_normal(2), 5)),
    "fori_loop": (lambda x: lax.fori_loop(0, 3, lambda i, v: v * 2.0 + i, x),
                  _normal((3,))),
    "fori_traced_bound": (_traced_loop, lambda rng: (rng.standard_normal(2), 4)),
    "scan": (lambda xs: lax.scan(lambda c, v: (c + v, c * v), 0.0, xs), _normal((4,))),
    "unread_output": (_unread, _normal((3,))),
    "cond_in_loop": (_cond_in_loop, _normal((2,))),
    "nested_jit": (_nested, _normal((3,), (3,))),
}

# The control-flow programs, what ``ex05_closure_convert`` runs a learner's closure
# conversion on: those of PROGRAMS, and programs whose bodies capture values (arrays and
# tracers, one value captured by several branches, branches nested in loops, which capture
# from two traces out). The capturing ones stay out of PROGRAMS, whose every program is a
# case of the chapter 03 exercises (their notebook counts them).
CONTROL_FLOW: dict[str, tuple[Callable, Callable]] = {
    **{name: PROGRAMS[name] for name in ("cond", "switch", "while_loop", "fori_loop",
                                         "fori_traced_bound", "scan", "unread_output",
                                         "cond_in_loop")},
    "cond_captures_array": (_cond_captures_array, _normal((3,))),
    "cond_captures_tracers": (_cond_captures_tracers,
                              lambda rng: (*rng.standard_normal((2, 3)),
                                           np.float64(rng.standard_normal()))),
    "switch_captures": (_switch_captures, lambda rng: (int(rng.integers(0, 4)),
                                                       *rng.standard_normal((3, 3)))),
    "while_captures": (_while_captures, lambda rng: (rng.standard_normal(3),
                                                     np.float64(20.0), np.float64(0.75))),
    "scan_captures": (_scan_captures, lambda rng: (rng.standard_normal((4, 3)),
                                                   *rng.standard_normal((2, 3)))),
    "cond_in_while": (_cond_in_while, _normal((3,), (3,))),
    "nested_loops": (_nested_loops, _normal((3,), (3,))),
}

# Programs whose jaxprs print with the default equation layout only: no `dot_general`,
# `broadcast_in_dim` or nested `jit`, which have printing rules of their own
# (`minijit.ir.pp_eqn_rules`). tests/test_build.py checks the list.
PRINTABLE = tuple(name for name in PROGRAMS if name not in ("dot", "where", "nested_jit"))


def make_args(name: str, seed: int) -> tuple:
    """The arguments of program `name` (of PROGRAMS or CONTROL_FLOW), from a generator seeded
    with `seed`."""
    return {**PROGRAMS, **CONTROL_FLOW}[name][1](np.random.default_rng(seed))
