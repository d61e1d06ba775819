"""Every first-order primitive and its abstract-evaluation (shape and dtype) rule (chapter 03).

Primitives are strict, like JAX's `lax`: binary operations need equal dtypes, and equal shapes
unless one side is a scalar. Promotion and broadcasting happen one level up, in
`minijit.numpy`, which inserts explicit `convert_element_type` and `broadcast_in_dim`
equations, so the IR says exactly what runs.

Adding a primitive, every place it needs; leaving any one out fails the test named, with a
message that names the place:
1. here: `foo_p = _new("foo")`, its abstract-eval rule, and its op groups (ELEMENTWISE,
   UNARY/BINARY, COMMUTATIVE, COMPARISONS, REDUCTIONS);
2. tests/test_rules.py: the op-group lists (UNARY, BINARY, STRUCTURAL ...) that say,
   deliberately, which groups it belongs to (test_every_primitive_is_classified_here,
   test_op_groups);
3. `interpret.py`: its impl rule on NumPy (test_rules.py::test_every_primitive_has_a_rule,
   and test_impl_matches_abstract_eval_on_every_dtype);
4. `codegen/rules.py`'s `numba_rules`: an `Expression` (written in `codegen/scalar_rules.py`)
   for an elementwise primitive, else a `Statements` rule (`codegen/array_rules.py`)
   (test_rules.py::test_every_primitive_has_a_rule[numba_rules]);
5. `lax/ops.py`: the strict wrapper that binds it (test_every_primitive_has_a_lax_wrapper),
   and a `minijit.numpy` function where NumPy has one (`numpy/ufuncs.py` for an elementwise
   one; defining it there makes it public);
6. tests/catalogue.py: a program that uses it, run eagerly, by `eval_jaxpr` and by every
   backend against NumPy (test_every_primitive_is_exercised_by_the_catalogue).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from minijit import dtypes
from minijit.core import (
    BINARY,
    COMMUTATIVE,
    COMPARISONS,
    ELEMENTWISE,
    REDUCTIONS,
    UNARY,
    Primitive,
    ShapedArray,
    abstract_eval_rules,
)
from minijit.ir import Shown, pp_eqn_default, pp_eqn_rules

ALL_PRIMITIVES: dict[str, Primitive] = {}


def _new(name: str, **kw) -> Primitive:
    p = Primitive(name, **kw)
    ALL_PRIMITIVES[name] = p
    return p


def _fail(prim: str, msg: str):
    raise TypeError(f"{prim}: {msg}")


# Which dtypes each operation accepts, by dtype kind (b=bool, i=int, u=uint, f=float).
ANY, NUMERIC, FLOAT, INTEGRAL, INTEGER = "biuf", "iuf", "f", "biu", "iu"


def _check_kinds(prim: str, kinds: str, *avals: ShapedArray):
    for position, a in enumerate(avals):
        if a.dtype.kind not in kinds:
            if kinds == INTEGER:  # JAX's words for its shifts, and the way out
                _fail(prim, f"does not accept dtype {a.dtype.name} at position {position}: "
                            "it needs integer inputs (int8..int64, uint8..uint64), got "
                            f"{a.str_short()}; convert with .astype(...) first")
            wanted = {ANY: "any", NUMERIC: "numeric", FLOAT: "floating-point",
                      INTEGRAL: "bool or integer"}[kinds]
            _fail(prim, f"needs {wanted} inputs, got {a.str_short()}")


# --------------------------------------------------------------------------- elementwise


def _unary_rule(x: ShapedArray, *, name: str, kinds: str) -> list[ShapedArray]:
    _check_kinds(name, kinds, x)
    return [x]


def _unary(name: str, kinds: str) -> Primitive:
    p = _new(name)
    abstract_eval_rules[p] = partial(_unary_rule, name=name, kinds=kinds)
    UNARY.add(p)
    ELEMENTWISE.add(p)
    return p


neg_p = _unary("neg", NUMERIC)
abs_p = _unary("abs", NUMERIC)
sign_p = _unary("sign", NUMERIC)
floor_p = _unary("floor", NUMERIC)
ceil_p = _unary("ceil", NUMERIC)
exp_p = _unary("exp", FLOAT)
log_p = _unary("log", FLOAT)
log1p_p = _unary("log1p", FLOAT)
expm1_p = _unary("expm1", FLOAT)
sin_p = _unary("sin", FLOAT)
cos_p = _unary("cos", FLOAT)
tan_p = _unary("tan", FLOAT)
tanh_p = _unary("tanh", FLOAT)
logistic_p = _unary("logistic", FLOAT)  # 1 / (1 + exp(-x)), as jax.nn.sigmoid binds it
erf_p = _unary("erf", FLOAT)  # the error function, as jax.scipy.special.erf binds it
sqrt_p = _unary("sqrt", FLOAT)
not_p = _unary("not", INTEGRAL)  # logical on bool, bitwise on ints (as in JAX)
is_finite_p = _new("is_finite")  # neither inf nor NaN: floats in, bools out (as in JAX)


def _is_finite_rule(x: ShapedArray) -> list[ShapedArray]:
    _check_kinds("is_finite", FLOAT, x)
    return [x.update(dtype=dtypes.bool_, weak_type=False)]


abstract_eval_rules[is_finite_p] = _is_finite_rule
UNARY.add(is_finite_p)
ELEMENTWISE.add(is_finite_p)


def _broadcast_shapes_strict(prim: str, *avals: ShapedArray) -> tuple[int, ...]:
    """Equal shapes, or rank-0 operands that stand for a constant over the others."""
    shapes = {a.shape for a in avals if a.shape != ()}
    if len(shapes) > 1:
        got = " and ".join(a.str_short() for a in avals)
        _fail(prim, f"needs equal shapes (or scalars), got {got}; "
                    "minijit.numpy broadcasts for you, lax does not")
    return shapes.pop() if shapes else ()


def _binary_rule(x: ShapedArray, y: ShapedArray, *, name: str, kinds: str,
                 out_dtype=None) -> list[ShapedArray]:
    if x.dtype != y.dtype:
        _fail(name, f"needs equal dtypes, got {x.str_short()} and {y.str_short()}; "
                    "convert one with .astype(...) (minijit.numpy promotes for you)")
    _check_kinds(name, kinds, x, y)
    shape = _broadcast_shapes_strict(name, x, y)
    dtype = x.dtype if out_dtype is None else out_dtype
    return [ShapedArray(shape, dtype, x.weak_type and y.weak_type and out_dtype is None)]


def _binary(name: str, kinds: str, *, commutative=False, comparison=False) -> Primitive:
    p = _new(name)
    out = dtypes.bool_ if comparison else None
    abstract_eval_rules[p] = partial(_binary_rule, name=name, kinds=kinds, out_dtype=out)
    BINARY.add(p)
    ELEMENTWISE.add(p)
    if commutative:
        COMMUTATIVE.add(p)
    if comparison:
        COMPARISONS.add(p)
    return p


add_p = _binary("add", NUMERIC, commutative=True)  # bools: mnp.add is `or`, as in JAX
sub_p = _binary("sub", NUMERIC)
mul_p = _binary("mul", NUMERIC, commutative=True)  # bools: mnp.multiply is `and`
div_p = _binary("div", NUMERIC)  # ints: rounds toward 0; x / 0 is -1 (as JAX and XLA)
floor_divide_p = _binary("floor_divide", NUMERIC)  # NumPy's //: rounds toward -inf
remainder_p = _binary("remainder", NUMERIC)  # NumPy's %: sign of the divisor
rem_p = _binary("rem", NUMERIC)  # JAX's lax.rem, C's %: sign of the dividend; x rem 0 is x
pow_p = _binary("pow", NUMERIC)
atan2_p = _binary("atan2", FLOAT)
max_p = _binary("max", ANY, commutative=True)  # NaN-propagating, like np.maximum
min_p = _binary("min", ANY, commutative=True)
and_p = _binary("and", INTEGRAL, commutative=True)
or_p = _binary("or", INTEGRAL, commutative=True)
xor_p = _binary("xor", INTEGRAL, commutative=True)
# Shifts, with XLA's defined results where C's and NumPy's are undefined: the amount is read
# as unsigned, and one of at least the bit width (a negative one too) shifts every bit out:
# 0 for shift_left and shift_right_logical, the sign bit repeated for shift_right_arithmetic
# (which treats the top bit of an unsigned int as a sign too, as XLA does). Ints only: JAX
# refuses bools here, and minijit.numpy computes `bool << bool` in int32, as JAX does.
shift_left_p = _binary("shift_left", INTEGER)
shift_right_logical_p = _binary("shift_right_logical", INTEGER)
shift_right_arithmetic_p = _binary("shift_right_arithmetic", INTEGER)
eq_p = _binary("eq", ANY, commutative=True, comparison=True)
ne_p = _binary("ne", ANY, commutative=True, comparison=True)
lt_p = _binary("lt", ANY, comparison=True)
le_p = _binary("le", ANY, comparison=True)
gt_p = _binary("gt", ANY, comparison=True)
ge_p = _binary("ge", ANY, comparison=True)


integer_pow_p = _new("integer_pow")  # x ** y for a Python int y, a param


def _integer_pow_rule(x: ShapedArray, *, y: int):
    _check_kinds("integer_pow", NUMERIC, x)
    if y < 0 and dtypes.is_int(x.dtype):
        _fail("integer_pow", f"integers cannot be raised to a negative power ({y})")
    return [x]


abstract_eval_rules[integer_pow_p] = _integer_pow_rule
UNARY.add(integer_pow_p)
ELEMENTWISE.add(integer_pow_p)


convert_element_type_p = _new("convert_element_type")


def _convert_rule(x: ShapedArray, *, new_dtype, weak_type: bool):
    return [ShapedArray(x.shape, dtypes.canonicalize(new_dtype), weak_type)]


abstract_eval_rules[convert_element_type_p] = _convert_rule
UNARY.add(convert_element_type_p)
ELEMENTWISE.add(convert_element_type_p)


clamp_p = _new("clamp")  # clamp(lo, x, hi) = min(max(x, lo), hi); bounds scalar or x's shape


def _clamp_rule(lo: ShapedArray, x: ShapedArray, hi: ShapedArray):
    _check_kinds("clamp", NUMERIC, x)
    if lo.dtype != x.dtype or hi.dtype != x.dtype:
        _fail("clamp", f"needs equal dtypes, got {lo.str_short()}, {x.str_short()} and "
                       f"{hi.str_short()}")
    if any(b.shape not in ((), x.shape) for b in (lo, hi)):
        _fail("clamp", f"the bounds must be scalars or have x's shape {x.shape}")
    return [x.update(weak_type=x.weak_type and lo.weak_type and hi.weak_type)]


abstract_eval_rules[clamp_p] = _clamp_rule
ELEMENTWISE.add(clamp_p)

select_n_p = _new("select_n")  # select_n(pred, *cases): cases[pred]; false first, as in JAX


def _select_n_rule(pred: ShapedArray, *cases: ShapedArray):
    if not cases:
        _fail("select_n", "needs at least one case")
    if pred.dtype != dtypes.bool_ and not (len(cases) > 2 and dtypes.is_int(pred.dtype)):
        _fail("select_n", f"the predicate must be bool, got {pred.str_short()}")
    if len({c.dtype for c in cases}) > 1:
        _fail("select_n", "cases need equal dtypes, got "
                          + " and ".join(c.str_short() for c in cases))
    shape = _broadcast_shapes_strict("select_n", pred, *cases)
    if any(c.shape != shape for c in cases):
        _fail("select_n", "cases need the full shape; broadcast them first")
    return [ShapedArray(shape, cases[0].dtype, all(c.weak_type for c in cases))]


abstract_eval_rules[select_n_p] = _select_n_rule
ELEMENTWISE.add(select_n_p)


# --------------------------------------------------------------------------- reductions


def _check_axes(prim: str, x: ShapedArray, axes) -> tuple[int, ...]:
    axes = tuple(axes)
    if any(not (0 <= a < x.ndim) for a in axes) or len(set(axes)) != len(axes):
        _fail(prim, f"axes {axes} are not distinct axes of {x.str_short()}")
    return axes


def _reduce_rule(x: ShapedArray, *, axes, name: str, kinds: str):
    axes = _check_axes(name, x, axes)
    _check_kinds(name, kinds, x)
    if name in ("reduce_max", "reduce_min") and any(x.shape[a] == 0 for a in axes):
        _fail(name, f"zero-size axis of {x.str_short()} has no identity")
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _reduction(name: str, kinds: str) -> Primitive:
    p = _new(name)
    abstract_eval_rules[p] = partial(_reduce_rule, name=name, kinds=kinds)
    REDUCTIONS.add(p)
    return p


reduce_sum_p = _reduction("reduce_sum", NUMERIC)
reduce_prod_p = _reduction("reduce_prod", NUMERIC)
reduce_max_p = _reduction("reduce_max", ANY)
reduce_min_p = _reduction("reduce_min", ANY)


def _argminmax_rule(x: ShapedArray, *, axes, index_dtype, name: str):
    (axis,) = _check_axes(name, x, axes)
    if x.shape[axis] == 0:  # NumPy's and JAX's class and words
        raise ValueError(f"{name}: attempt to get {name} of an empty sequence")
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    return [ShapedArray(shape, index_dtype)]


argmax_p = _new("argmax")
argmin_p = _new("argmin")
abstract_eval_rules[argmax_p] = partial(_argminmax_rule, name="argmax")
abstract_eval_rules[argmin_p] = partial(_argminmax_rule, name="argmin")
REDUCTIONS.update({argmax_p, argmin_p})


# --------------------------------------------------------------------------- linear algebra

dot_general_p = _new("dot_general")


def _dot_general_rule(lhs, rhs, *, dimension_numbers, preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    if lb or rb:
        _fail("dot_general", "batch dimensions are not supported")
    if lhs.dtype != rhs.dtype:
        _fail("dot_general", f"needs equal dtypes, got {lhs.str_short()} and {rhs.str_short()}")
    _check_kinds("dot_general", ANY, lhs, rhs)
    if [lhs.shape[i] for i in lc] != [rhs.shape[i] for i in rc]:
        _fail("dot_general", f"contracting dimensions do not match: {lhs.str_short()} "
                             f"axes {tuple(lc)} and {rhs.str_short()} axes {tuple(rc)}")
    free_l = [d for i, d in enumerate(lhs.shape) if i not in lc]
    free_r = [d for i, d in enumerate(rhs.shape) if i not in rc]
    return [ShapedArray((*free_l, *free_r), preferred_element_type)]


abstract_eval_rules[dot_general_p] = _dot_general_rule


def multiplies_in_preferred(operand, preferred) -> bool:
    """Does `dot_general` convert its operands to `preferred_element_type` before it multiplies,
    rather than convert its result? As JAX does: float32 operands with float64 preferred sum
    float64 products, int8 ones with int32 preferred never wrap at int8, and int32 ones with
    float32 preferred are multiplied as floats. Not for a narrower float, nor for floats made
    integers (JAX converts the float result: 6.75 gives 6)."""
    operand, preferred = np.dtype(operand), np.dtype(preferred)
    if operand == preferred:
        return False
    if preferred.kind in "fc":
        return not (operand.kind in "fc" and operand.itemsize > preferred.itemsize)
    return operand.kind in "biu" and preferred.kind in "iu"


def _dot_general_pp_rule(eqn, names):
    # JAX prints the axis groups as lists: dimension_numbers=(([1], [0]), ([], [])).
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    shown = Shown(f"(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))")
    return pp_eqn_default(eqn, names, {**eqn.params, "dimension_numbers": shown})


pp_eqn_rules[dot_general_p] = _dot_general_pp_rule


# --------------------------------------------------------------------------- shapes

reshape_p = _new("reshape")


def _reshape_rule(x: ShapedArray, *, new_sizes):
    new_sizes = tuple(new_sizes)
    if any(d < 0 for d in new_sizes) or int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        _fail("reshape", f"cannot reshape {x.str_short()} ({x.size} elements) "
                         f"into shape {new_sizes}")
    return [x.update(shape=new_sizes)]


abstract_eval_rules[reshape_p] = _reshape_rule

transpose_p = _new("transpose")


def _transpose_rule(x: ShapedArray, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        _fail("transpose", f"{tuple(permutation)} is not a permutation of {x.ndim} axes")
    return [x.update(shape=tuple(x.shape[i] for i in permutation))]


abstract_eval_rules[transpose_p] = _transpose_rule

broadcast_in_dim_p = _new("broadcast_in_dim")


def _broadcast_in_dim_rule(x: ShapedArray, *, shape, broadcast_dimensions):
    bd = tuple(broadcast_dimensions)
    ok = len(bd) == x.ndim and all(0 <= d < len(shape) for d in bd) and list(bd) == sorted(
        set(bd)
    )
    if not ok or any(x.shape[i] not in (1, shape[d]) for i, d in enumerate(bd)):
        _fail("broadcast_in_dim", f"cannot broadcast {x.str_short()} to {tuple(shape)} "
                                  f"along dimensions {bd}")
    return [x.update(shape=tuple(shape))]


abstract_eval_rules[broadcast_in_dim_p] = _broadcast_in_dim_rule


def _broadcast_in_dim_pp_rule(eqn, names):
    # As JAX prints it: `shape` is the output's type, and no broadcast dimensions (a scalar
    # operand) go unsaid.
    params = {k: v for k, v in eqn.params.items()
              if k != "shape" and (k != "broadcast_dimensions" or v)}
    return pp_eqn_default(eqn, names, params)


pp_eqn_rules[broadcast_in_dim_p] = _broadcast_in_dim_pp_rule

squeeze_p = _new("squeeze")


def _squeeze_rule(x: ShapedArray, *, dimensions):
    dims = _check_axes("squeeze", x, dimensions)
    if any(x.shape[d] != 1 for d in dims):
        _fail("squeeze", f"can only squeeze axes of size 1; {x.str_short()} axes {dims}")
    return [x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in dims))]


abstract_eval_rules[squeeze_p] = _squeeze_rule

concatenate_p = _new("concatenate")


def _concatenate_rule(*xs: ShapedArray, dimension: int):
    if not xs:
        _fail("concatenate", "needs at least one array")
    x0 = xs[0]
    for x in xs:
        same = x.ndim == x0.ndim and all(
            a == b for i, (a, b) in enumerate(zip(x.shape, x0.shape)) if i != dimension
        )
        if x.dtype != x0.dtype or not same:
            _fail("concatenate", "arrays must agree in dtype and in all but axis "
                  f"{dimension}; got " + ", ".join(a.str_short() for a in xs))
    if not 0 <= dimension < x0.ndim:
        _fail("concatenate", f"axis {dimension} out of range for {x0.str_short()}")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return [ShapedArray(tuple(shape), x0.dtype, all(x.weak_type for x in xs))]


abstract_eval_rules[concatenate_p] = _concatenate_rule

pad_p = _new("pad")  # pad(operand, padding_value)[padding_config=((lo, hi, interior), ...)]


def _pad_rule(x: ShapedArray, value: ShapedArray, *, padding_config):
    if value.shape != () or value.dtype != x.dtype:
        _fail("pad", f"padding value must be a {x.dtype.name} scalar, got {value.str_short()}")
    if len(padding_config) != x.ndim or any(min(c) < 0 for c in padding_config):
        _fail("pad", f"padding_config {padding_config} does not fit {x.str_short()}")
    shape = tuple(
        lo + hi + d + max(d - 1, 0) * interior
        for d, (lo, hi, interior) in zip(x.shape, padding_config)
    )
    return [x.update(shape=shape)]


abstract_eval_rules[pad_p] = _pad_rule

slice_p = _new("slice")


def _slice_rule(x: ShapedArray, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim) or any(
        not (0 <= s <= lim <= d) or st < 1
        for s, lim, d, st in zip(start_indices, limit_indices, x.shape, strides)
    ):
        _fail("slice", f"bad slice {start_indices}:{limit_indices}:{strides} of {x.str_short()}")
    shape = tuple(
        (lim - s + st - 1) // st for s, lim, st in zip(start_indices, limit_indices, strides)
    )
    return [x.update(shape=shape)]


abstract_eval_rules[slice_p] = _slice_rule

rev_p = _new("rev")  # reverse the order of elements along `dimensions`


def _rev_rule(x: ShapedArray, *, dimensions):
    _check_axes("rev", x, dimensions)
    return [x]


abstract_eval_rules[rev_p] = _rev_rule


def _check_indices(prim: str, x: ShapedArray, indices):
    if len(indices) != x.ndim:
        _fail(prim, f"needs {x.ndim} start indices for {x.str_short()}, got {len(indices)}")
    for i in indices:
        if i.shape != () or not dtypes.is_int(i.dtype):
            _fail(prim, f"start indices must be integer scalars, got {i.str_short()}")


dynamic_slice_p = _new("dynamic_slice")  # starts are clamped so the slice fits, as in JAX


def _dynamic_slice_rule(x: ShapedArray, *indices: ShapedArray, slice_sizes):
    _check_indices("dynamic_slice", x, indices)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        _fail("dynamic_slice", f"slice sizes {tuple(slice_sizes)} do not fit {x.str_short()}")
    return [x.update(shape=tuple(slice_sizes))]


abstract_eval_rules[dynamic_slice_p] = _dynamic_slice_rule

dynamic_update_slice_p = _new("dynamic_update_slice")


def _dynamic_update_slice_rule(x: ShapedArray, update: ShapedArray, *indices: ShapedArray):
    _check_indices("dynamic_update_slice", x, indices)
    if update.dtype != x.dtype or update.ndim != x.ndim or any(
        u > d for u, d in zip(update.shape, x.shape)
    ):
        _fail("dynamic_update_slice", f"update {update.str_short()} does not fit into "
                                      f"{x.str_short()}")
    return [x]


abstract_eval_rules[dynamic_update_slice_p] = _dynamic_update_slice_rule

iota_p = _new("iota")  # iota[dtype, shape, dimension]: 0, 1, 2, ... along `dimension`


def _iota_rule(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        _fail("iota", f"dimension {dimension} out of range for shape {shape}")
    return [ShapedArray(tuple(shape), dtype)]


abstract_eval_rules[iota_p] = _iota_rule


def per_element(p: Primitive) -> bool:
    """Whether each output element of `p` reads each input at one index: every elementwise
    primitive, and `broadcast_in_dim`, which only maps the index. This is what one loop over
    the elements may compute (fusion, and loop bodies lowered as whole-array loops)."""
    return p in ELEMENTWISE or p is broadcast_in_dim_p
