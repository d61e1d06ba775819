"""`eval_jaxpr` and the NumPy implementation of every primitive (chapter 03).

This is the executable specification: every backend (and every optimizer pass) is tested
against it. Rules are written for clarity, not speed. Each `impl_rules[p]` takes NumPy arrays
and returns a list of arrays whose shapes and dtypes match the primitive's abstract-eval rule;
`eval_jaxpr` checks that, so a wrong rule fails loudly here instead of somewhere downstream.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from minijit import build, dtypes
from minijit import primitives as P
from minijit.core import ShapedArray, impl_rules
from minijit.ir import Eqn, Jaxpr, Lit, Var, pp_eqn_alone


class EvalError(RuntimeError):
    """An equation failed while being evaluated; the message names it and its source line."""


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence, *args) -> list[np.ndarray]:
    """Run `jaxpr` on NumPy values; returns the list of outputs.

    Every caller in minijit (`mj.eval_jaxpr`, the interpreter backend, the impl rules of
    `cond`, `while`, `scan` and nested `jit`) comes through here, which runs the build
    track's current piece: `reference_eval_jaxpr` below, or yours after
    `build.use("eval_jaxpr", ...)` (see `minijit/build.py`). A piece of yours may return
    anything `np.asarray` takes, of the right shapes and dtypes; callers get arrays."""
    outs = build.call("eval_jaxpr", jaxpr, consts, *args)
    return outs if build.is_reference("eval_jaxpr") else [np.asarray(o) for o in outs]


def reference_eval_jaxpr(jaxpr: Jaxpr, consts: Sequence, *args) -> list[np.ndarray]:
    """minijit's own `eval_jaxpr`: the environment loop, with the checks worth copying."""
    build.guard("eval_jaxpr")  # fails when a learner's piece hands its work to this one
    if len(consts) != len(jaxpr.constvars) or len(args) != len(jaxpr.invars):
        raise TypeError(
            f"eval_jaxpr: expected {len(jaxpr.constvars)} consts and {len(jaxpr.invars)} args, "
            f"got {len(consts)} and {len(args)}"
        )
    env: dict[int, np.ndarray] = {}

    def read(a):
        return np.asarray(a.val, dtype=a.aval.dtype) if isinstance(a, Lit) else env[id(a)]

    for v, x in zip((*jaxpr.constvars, *jaxpr.invars), (*consts, *args)):
        env[id(v)] = np.asarray(x, dtype=v.aval.dtype)
    # Free each value after its last use, so big programs need no more memory than NumPy.
    last_use = {id(a): i for i, e in enumerate(jaxpr.eqns) for a in e.invars}
    for a in jaxpr.outvars:
        last_use[id(a)] = len(jaxpr.eqns)
    with np.errstate(all="ignore"):  # like JAX: 1/0 is inf without a warning
        for i, eqn in enumerate(jaxpr.eqns):
            try:
                outs = impl_rules[eqn.primitive](*map(read, eqn.invars), **eqn.params)
            except Exception as e:
                where = f" (from {eqn.source})" if eqn.source else ""
                raise EvalError(
                    f"while evaluating `{pp_eqn_alone(eqn)}`{where}: {type(e).__name__}: {e}"
                ) from e
            for v, out in zip(eqn.outvars, outs):
                out = np.asarray(out)
                if out.shape != v.aval.shape or out.dtype != v.aval.dtype:
                    raise EvalError(
                        f"impl rule of {eqn.primitive.name} returned {out.dtype}{out.shape}, "
                        f"expected {v.aval} in `{pp_eqn_alone(eqn)}`"
                    )
                env[id(v)] = out
            for a in eqn.invars:
                if last_use.get(id(a)) == i:
                    env.pop(id(a), None)
    return [read(a) for a in jaxpr.outvars]


def _check_outputs(outs, jaxpr: Jaxpr, consts, *args) -> str | None:
    """What is wrong with `outs` as the result of running `jaxpr`, if anything."""
    if not isinstance(outs, (list, tuple)):
        return f"returned a {type(outs).__name__}; it must return a list of arrays"
    if len(outs) != len(jaxpr.outvars):
        return f"returned {len(outs)} values for a jaxpr with {len(jaxpr.outvars)} outputs"
    for k, (out, a) in enumerate(zip(outs, jaxpr.outvars)):
        got = np.asarray(out)
        if got.shape != a.aval.shape or got.dtype != a.aval.dtype:
            return (f"returned {got.dtype}{list(got.shape)} as output {k}, "
                    f"where the jaxpr says {a.aval.str_short()}")
    return None


def _selftest(eval_jaxpr) -> str | None:
    """Run a candidate on `{ lambda a ; b s . let c = mul b s; d = add c a in (d, c) }`,
    `s` a Python float (as `jit` passes one: `f(2.0)`)."""
    f64 = ShapedArray((3,), np.dtype(np.float64))
    weak = ShapedArray((), np.dtype(np.float64), weak_type=True)
    a, b, c, d, s = Var(f64), Var(f64), Var(f64), Var(f64), Var(weak)
    jaxpr = Jaxpr((a,), (b, s), (Eqn(P.mul_p, (b, s), (c,)), Eqn(P.add_p, (c, a), (d,))),
                  (d, c))
    consts, args = [np.array([1.0, 2.0, 3.0])], [np.array([0.5, -1.0, 4.0]), 2.0]
    outs = eval_jaxpr(jaxpr, consts, *args)
    problem = _check_outputs(outs, jaxpr, consts, *args)
    if problem is None and not all(np.array_equal(np.asarray(o), w) for o, w in zip(
            outs, reference_eval_jaxpr(jaxpr, consts, *args))):
        problem = "computed other values than minijit's"
    return problem


build.register("eval_jaxpr", reference_eval_jaxpr, chapter="03_the_ir",
               signature="eval_jaxpr(jaxpr, consts, *args) -> list of arrays",
               check=_check_outputs, selftest=_selftest)


# --------------------------------------------------------------------------- what a learner's
# eval_jaxpr hands the impl rules


def _checked_impl(prim, rule, program, /, *vals, **params):
    """`rule(*vals, **params)` once `vals` are what `program`'s equation of `prim` reads
    (`core.ImplRules`: while a learner's eval_jaxpr runs)."""
    # positional-only: an impl rule's params may be named `jaxpr`
    problem = _operand_problem(prim, program, vals)
    if problem:
        raise TypeError(f"{problem}. eval_jaxpr must bind every value (the arguments and "
                        "consts too) as a NumPy array of its Var's dtype: "
                        "np.asarray(value, dtype=var.aval.dtype)")
    return rule(*vals, **params)


def _operand_problem(prim, jaxpr, vals) -> str | None:
    eqns = [e for e in getattr(jaxpr, "eqns", ()) if e.primitive is prim]
    for k, v in enumerate(vals):
        if not isinstance(v, (np.ndarray, np.generic)):
            return (f"the impl rule of {prim.name} got a {type(v).__name__} as operand {k}"
                    + _which(prim, eqns))
    fits = [e for e in eqns if len(e.invars) == len(vals) and all(
        v.dtype == a.aval.dtype and v.shape == a.aval.shape for v, a in zip(vals, e.invars))]
    if eqns and not fits:
        got = ", ".join(f"{v.dtype}{list(v.shape)}" for v in vals)
        return f"the impl rule of {prim.name} got operands {got}{_which(prim, eqns)}"
    return None


def _which(prim, eqns) -> str:
    """Where the program's equations of `prim` are: the one, printed, or how many."""
    if len(eqns) == 1:
        return f", in `{pp_eqn_alone(eqns[0])}`"
    return f", in one of the {len(eqns)} {prim.name} equations" if eqns else ""


impl_rules.check_operands = _checked_impl


# --------------------------------------------------------------------------- elementwise


def _vectorized(f, *args, **_):
    return [f(*args)]


def _logistic(x):
    """1 / (1 + exp(-x)), in x's dtype, with no overflow for any x: e = exp(-|x|) is at most
    1, and for x < 0 the same value is written e / (1 + e). Within 2 ulp of the exact value;
    logistic(-inf) = 0, logistic(inf) = 1, logistic(+-0.0) = 0.5, NaN stays NaN."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


def _erf(x):
    """SciPy's erf (Cephes' rational approximations, within 1 ulp), in x's dtype: erf(-0.0)
    is -0.0, erf(+-inf) = +-1, NaN stays NaN. Imported on first use, so that importing
    minijit does not import SciPy."""
    from scipy.special import erf

    return erf(x)


_UNARY = {
    P.neg_p: np.negative, P.abs_p: np.abs, P.sign_p: np.sign, P.floor_p: np.floor,
    P.ceil_p: np.ceil, P.exp_p: np.exp, P.log_p: np.log, P.log1p_p: np.log1p,
    P.expm1_p: np.expm1, P.sin_p: np.sin, P.cos_p: np.cos, P.tan_p: np.tan,
    P.tanh_p: np.tanh, P.logistic_p: _logistic, P.erf_p: _erf, P.sqrt_p: np.sqrt,
    P.not_p: np.invert, P.is_finite_p: np.isfinite,
}


def _maximum(x, y):
    # np.maximum returns its second operand on a tie, so maximum(-0.0, 0.0) would depend on
    # the order, which cse does not keep (max is COMMUTATIVE). IEEE 754 and JAX say +0.0; on a
    # tie between zeros, x + y is -0.0 only when both are -0.0.
    out = np.maximum(x, y)
    return np.where((x == y) & (x == 0), x + y, out) if out.dtype.kind == "f" else out


def _minimum(x, y):
    # As in _maximum: -0.0 wins, and -(-x - y) is +0.0 only when both zeros are +0.0.
    out = np.minimum(x, y)
    return np.where((x == y) & (x == 0), -(-x - y), out) if out.dtype.kind == "f" else out


def _power(x, y):
    """np.power, except that an integer to a negative power is not an error.

    NumPy raises ValueError, and so does `mnp.power` on concrete values; inside a compiled
    program the exponent is data, so every backend gives the integer part of 1 / x**|y|:
    1 for x == 1, +-1 for x == -1, else 0 (0 ** -1 too, as in JAX).
    """
    if x.dtype.kind != "i" or not (y < 0).any():
        return np.power(x, y)
    negative = y < 0
    inverse = np.where(x == 1, 1, np.where(x == -1, 1 - 2 * (y & 1), 0)).astype(x.dtype)
    return np.where(negative, inverse, np.power(x, np.where(negative, 0, y).astype(y.dtype)))


def _integer_pow(x, *, y):
    # Repeated squaring with wraparound, as NumPy's power: y may not fit x's dtype
    # (int8_array ** 1000), so it is given in a dtype of the same signedness that holds it.
    if x.dtype.kind in "iu":
        exponent = np.asarray(y, dtype=np.uint64 if x.dtype.kind == "u" else np.int64)
        return [np.power(x, exponent).astype(x.dtype)]
    return [np.power(x, np.asarray(y, dtype=x.dtype))]


def _div(x, y):
    """JAX's `lax.div`: true division for floats; for ints, rounding toward zero, with XLA's
    x / 0 == -1 (all ones for unsigned) and int_min / -1 wrapping to int_min."""
    if x.dtype.kind == "f":
        return np.true_divide(x, y)
    q = np.floor_divide(x, y)
    q = q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0))).astype(x.dtype)
    return np.where(y == 0, np.array(-1).astype(x.dtype), q)


def _rem(x, y):
    """JAX's `lax.rem`: C's remainder, with the sign of the dividend; for ints x rem 0 is x."""
    if x.dtype.kind == "f":
        return np.fmod(x, y)
    return np.where(y == 0, x, np.fmod(x, np.where(y == 0, 1, y)))


def _clamp(lo, x, hi):
    return _minimum(_maximum(x, lo), hi)


# Shifts. C leaves a shift by the bit width or more (or by a negative amount) undefined, and
# NumPy passes that on (x86 shifts by the amount mod 64), so each rule selects XLA's result
# for those amounts explicitly and shifts only by amounts that are in range.


def _shift_amount(x, y):
    """`(in_range, y)`: where the amount `y`, read as unsigned (as XLA does), is below the
    bit width of `x`, and `y` as an unsigned array, safe to shift by where it is."""
    unsigned = np.dtype(f"uint{x.dtype.itemsize * 8}")
    y = np.asarray(y).view(unsigned)
    in_range = y < x.dtype.itemsize * 8
    return in_range, np.where(in_range, y, 0).astype(unsigned)


def _shift_left(x, y):
    """Bits out of range become 0: x << y, or 0 where y >= the bit width (or y < 0)."""
    in_range, y = _shift_amount(x, y)
    return np.where(in_range, np.left_shift(x, y.astype(x.dtype)), 0).astype(x.dtype)


def _shift_right_logical(x, y):
    """Zeros come in from the top: the shift of x's bits as an unsigned int."""
    in_range, y = _shift_amount(x, y)
    bits = np.asarray(x).view(y.dtype)
    return np.where(in_range, np.right_shift(bits, y), 0).astype(y.dtype).view(x.dtype)


def _shift_right_arithmetic(x, y):
    """Copies of the top bit come in (it is the sign, unsigned ints too, as in XLA); a shift
    by the bit width or more is a shift by width - 1: all copies of the top bit."""
    in_range, y = _shift_amount(x, y)
    signed = np.dtype(f"int{x.dtype.itemsize * 8}")
    amount = np.where(in_range, y, x.dtype.itemsize * 8 - 1).astype(signed)
    return np.right_shift(np.asarray(x).view(signed), amount).view(x.dtype)


_BINARY = {
    P.add_p: np.add, P.sub_p: np.subtract, P.mul_p: np.multiply, P.div_p: _div,
    P.floor_divide_p: np.floor_divide, P.remainder_p: np.remainder, P.pow_p: _power,
    P.atan2_p: np.arctan2, P.rem_p: _rem,
    P.max_p: _maximum, P.min_p: _minimum, P.and_p: np.bitwise_and, P.or_p: np.bitwise_or,
    P.xor_p: np.bitwise_xor, P.shift_left_p: _shift_left,
    P.shift_right_logical_p: _shift_right_logical,
    P.shift_right_arithmetic_p: _shift_right_arithmetic, P.eq_p: np.equal,
    P.ne_p: np.not_equal, P.lt_p: np.less,
    P.le_p: np.less_equal, P.gt_p: np.greater, P.ge_p: np.greater_equal,
}
for _p, _f in {**_UNARY, **_BINARY}.items():
    impl_rules[_p] = partial(_vectorized, _f)

impl_rules[P.integer_pow_p] = _integer_pow


def convert_element_type(x: np.ndarray, new_dtype) -> np.ndarray:
    """`x` in `new_dtype` as XLA (so JAX) converts it: NumPy's cast, but for float to int.

    NumPy's float-to-int cast of NaN, inf or a value out of range is undefined (x86 gives
    int_min, with a RuntimeWarning). XLA saturates: NaN is 0, a value beyond the range is
    the nearest end of it (-1.0 to uint8 is 0, 1e10 to int32 is int32_max), and the rest
    truncate toward 0. Only those casts need the extra work; every other one (int to int
    wraps, to bool is `!= 0`, float64 to float32 rounds to nearest and overflows to inf) is
    NumPy's already, and stays its single fast cast.
    """
    new_dtype = np.dtype(new_dtype)
    x = np.asarray(x)
    if x.dtype.kind != "f" or new_dtype.kind not in "iu":
        return x.astype(new_dtype)
    lo, hi = dtypes.int_range_as_floats(new_dtype)
    inside = (x >= lo) & (x < hi)  # False for NaN
    out = np.where(inside, x, 0).astype(new_dtype)  # no value out of range reaches the cast
    info = np.iinfo(new_dtype)
    out = np.where(x >= hi, new_dtype.type(info.max), out)
    return np.where(x < lo, new_dtype.type(info.min), out)


impl_rules[P.convert_element_type_p] = lambda x, *, new_dtype, weak_type: [
    convert_element_type(x, new_dtype)
]


def _select_n(pred, *cases):
    if pred.dtype == np.bool_:
        pred = pred.astype(np.int64)
    return [np.choose(pred, [np.broadcast_to(c, np.broadcast(pred, *cases).shape)
                             for c in cases])]


impl_rules[P.select_n_p] = _select_n
impl_rules[P.clamp_p] = lambda lo, x, hi: [_clamp(lo, x, hi)]

# --------------------------------------------------------------------------- reductions

impl_rules[P.reduce_sum_p] = lambda x, *, axes: [np.sum(x, axis=tuple(axes), dtype=x.dtype)]
impl_rules[P.reduce_prod_p] = lambda x, *, axes: [np.prod(x, axis=tuple(axes), dtype=x.dtype)]
def _signed_zeros(out, x, axes, positive: bool):
    """A max (positive=True) or min over `axes` with JAX's zeros: -0.0 orders below +0.0. np.max
    returns whichever zero it meets last, so its sign depends on the order of the elements."""
    if out.dtype.kind != "f" or not np.any(out == 0):
        return out
    wanted = np.any((x == 0) & (np.signbit(x) != positive), axis=axes)
    zero = np.where(wanted, 0.0, -0.0) if positive else np.where(wanted, -0.0, 0.0)
    return np.where(out == 0, zero.astype(out.dtype), out)


impl_rules[P.reduce_max_p] = lambda x, *, axes: [
    _signed_zeros(np.max(x, axis=tuple(axes)), x, tuple(axes), True)]
impl_rules[P.reduce_min_p] = lambda x, *, axes: [
    _signed_zeros(np.min(x, axis=tuple(axes)), x, tuple(axes), False)]
impl_rules[P.argmax_p] = lambda x, *, axes, index_dtype: [
    np.argmax(x, axis=axes[0]).astype(index_dtype)
]
impl_rules[P.argmin_p] = lambda x, *, axes, index_dtype: [
    np.argmin(x, axis=axes[0]).astype(index_dtype)
]


def _dot_general(lhs, rhs, *, dimension_numbers, preferred_element_type):
    (lc, rc), _ = dimension_numbers
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    if P.multiplies_in_preferred(lhs.dtype, preferred_element_type):
        lhs, rhs = lhs.astype(preferred_element_type), rhs.astype(preferred_element_type)
    out = np.tensordot(lhs, rhs, axes=(tuple(lc), tuple(rc)))
    return [np.asarray(out).astype(preferred_element_type, copy=False)]


impl_rules[P.dot_general_p] = _dot_general

# --------------------------------------------------------------------------- shapes

impl_rules[P.reshape_p] = lambda x, *, new_sizes: [np.reshape(x, new_sizes)]
impl_rules[P.transpose_p] = lambda x, *, permutation: [np.transpose(x, permutation)]
impl_rules[P.squeeze_p] = lambda x, *, dimensions: [np.squeeze(x, axis=tuple(dimensions))]
impl_rules[P.rev_p] = lambda x, *, dimensions: [np.flip(x, axis=tuple(dimensions))]
impl_rules[P.concatenate_p] = lambda *xs, dimension: [np.concatenate(xs, axis=dimension)]


def _broadcast_in_dim(x, *, shape, broadcast_dimensions):
    # Give x a size-1 axis everywhere it is not mapped, then let NumPy broadcast.
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return [np.broadcast_to(np.reshape(x, expanded), shape).copy()]


impl_rules[P.broadcast_in_dim_p] = _broadcast_in_dim


def _pad(x, value, *, padding_config):
    shape = tuple(
        lo + hi + d + max(d - 1, 0) * interior for d, (lo, hi, interior) in
        zip(x.shape, padding_config)
    )
    out = np.full(shape, value, dtype=x.dtype)
    index = tuple(
        slice(lo, lo + d + max(d - 1, 0) * interior, interior + 1)
        for d, (lo, _, interior) in zip(x.shape, padding_config)
    )
    out[index] = x
    return [out]


impl_rules[P.pad_p] = _pad


def _slice(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    return [x[tuple(slice(s, e, st) for s, e, st in zip(start_indices, limit_indices, strides))]]


impl_rules[P.slice_p] = _slice


def _clamped_starts(shape, sizes, indices):
    """Clamp each start so that the window fits, as XLA (and so JAX) does; in Python ints, so
    a uint64 start is never read as a negative int64. (`lax.dynamic_slice` has already
    counted a negative start from the end: the rule is in `minijit/indexing.py`'s docstring.)"""
    return [min(max(int(i), 0), d - s) for i, d, s in zip(indices, shape, sizes)]


def _dynamic_slice(x, *indices, slice_sizes):
    starts = _clamped_starts(x.shape, slice_sizes, indices)
    return [x[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))].copy()]


def _dynamic_update_slice(x, update, *indices):
    starts = _clamped_starts(x.shape, update.shape, indices)
    out = x.copy()
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return [out]


impl_rules[P.dynamic_slice_p] = _dynamic_slice
impl_rules[P.dynamic_update_slice_p] = _dynamic_update_slice


def _iota(*, dtype, shape, dimension):
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    ramp = np.arange(shape[dimension], dtype=dtype).reshape(expanded)
    return [np.broadcast_to(ramp, shape).copy()]


impl_rules[P.iota_p] = _iota
