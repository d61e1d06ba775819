"""The LLVM backend's per-element rules: one value of a primitive's result, as LLVM IR.

`scalar_rules[p](b, args, eqn) -> value` emits, through the llvmlite `IRBuilder` `b`, the
instructions that compute one element of `eqn`'s result from one element of each operand
(`args`, LLVM values in the operands' types). The same rule serves a rank-0 equation and the
body of a loop kernel, as `Expression` rules do for the Numba backend (`codegen/rules.py`).

Each rule computes exactly what `interpret.py`'s NumPy rule computes (the tests run every
program on both): integers wrap, `max`/`min` propagate NaN and order -0.0 below +0.0 (LLVM's
`maximum`/`minimum`, IEEE 754-2019's), a float converted to an integer saturates with NaN
as 0 (LLVM's `fptosi.sat`, XLA's rule). Math functions call the C library's (`sin`, `exp`,
...), as Numba's `math.sin` does, except where `vecmath.py` puts minijit's own vectorizable
`exp`, `log`, `tanh`, ... (`codegen/vecmath`, compiled from the same source). A primitive or
dtype missing here is one the backend does not compile (`LLVMUnsupported`, naming the
equation).

Values live in registers as `i1` for bool, `i32`/`i64`, `float`/`double`; in memory a bool is
a byte (NumPy's), which `emit.py` converts on load and store.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from minijit import primitives as P

BOOL, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
BYTES = I8.as_pointer()
F32, F64 = ir.FloatType(), ir.DoubleType()
TYPES = {np.dtype(np.bool_): BOOL, np.dtype(np.int32): I32, np.dtype(np.int64): I64,
         np.dtype(np.float32): F32, np.dtype(np.float64): F64}


class LLVMUnsupported(NotImplementedError):
    """The program uses something this backend does not compile; the message says what."""


def value_type(dtype) -> ir.Type:
    """The register type of one element of `dtype`."""
    try:
        return TYPES[np.dtype(dtype)]
    except KeyError:
        raise LLVMUnsupported(f"the dtype {np.dtype(dtype).name}") from None


def memory_type(dtype) -> ir.Type:
    """One element in memory: a bool is NumPy's byte."""
    t = value_type(dtype)
    return I8 if t == BOOL else t


def constant(dtype, value) -> ir.Constant:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return ir.Constant(BOOL, int(bool(value)))
    if kind == "f":
        return ir.Constant(value_type(dtype), float(value))
    return ir.Constant(value_type(dtype), int(value))


def _kind(eqn) -> str:
    return eqn.invars[0].aval.dtype.kind


def intrinsic(b: ir.IRBuilder, name: str, args, result=None):
    """A call of the LLVM intrinsic `llvm.<name>` overloaded on the arguments' type (and on
    the result's, if it differs: `fptosi.sat`)."""
    t = args[0].type
    suffix = "".join(f".{_suffix(x)}" for x in ([result] if result else []) + [t])
    fnty = ir.FunctionType(result or t, [x.type for x in args])
    fn = b.module.globals.get(f"llvm.{name}{suffix}")
    if fn is None:
        fn = ir.Function(b.module, fnty, f"llvm.{name}{suffix}")
    return b.call(fn, args)


def _suffix(t: ir.Type) -> str:
    return {F32: "f32", F64: "f64"}.get(t) or f"i{t.width}"


def _libm(b: ir.IRBuilder, name: str, x):
    """A call of the C library's `name` (`tanh`), or `namef` for float32."""
    symbol = name + ("f" if x.type == F32 else "")
    fn = b.module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(x.type, [x.type]), symbol)
    return b.call(fn, [x])


def _arith(float_op: str, int_op: str):
    def rule(b, args, eqn):
        if _kind(eqn) == "f":
            return getattr(b, float_op)(*args)
        if _kind(eqn) == "i":
            return getattr(b, int_op)(*args)
        raise LLVMUnsupported(f"{eqn.primitive.name} of {eqn.invars[0].aval.dtype.name}")
    return rule


def _extremum(name: str, int_pred: str):
    def rule(b, args, eqn):
        if _kind(eqn) == "f":
            return intrinsic(b, name, args)  # NaN wins, -0.0 < +0.0
        if _kind(eqn) == "i":
            return b.select(b.icmp_signed(int_pred, *args), *args)
        raise LLVMUnsupported(f"{eqn.primitive.name} of bool")
    return rule


def _compare(op: str):
    def rule(b, args, eqn):
        if _kind(eqn) == "f":
            # ordered comparisons are false with a NaN operand; `!=` is unordered (true)
            return b.fcmp_unordered(op, *args) if op == "!=" else b.fcmp_ordered(op, *args)
        if _kind(eqn) == "b":
            return b.icmp_unsigned(op, *args)
        return b.icmp_signed(op, *args)
    return rule


def _neg(b, args, eqn):
    (x,) = args
    if _kind(eqn) == "f":
        return b.fneg(x)
    if _kind(eqn) == "i":
        return b.neg(x)
    raise LLVMUnsupported("neg of bool")


def _abs(b, args, eqn):
    (x,) = args
    if _kind(eqn) == "f":
        return intrinsic(b, "fabs", [x])
    if _kind(eqn) == "i":  # wraps: abs(int_min) == int_min, as NumPy's
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)
    raise LLVMUnsupported("abs of bool")


def float_only(name: str, call):
    def rule(b, args, eqn):
        if _kind(eqn) != "f":
            raise LLVMUnsupported(f"{eqn.primitive.name} of {eqn.invars[0].aval.dtype.name}")
        return call(b, name, args[0])
    return rule


def _intrinsic1(b, name, x):
    return intrinsic(b, name, [x])


def _logical(op: str):
    def rule(b, args, eqn):
        if _kind(eqn) not in "bi":
            raise LLVMUnsupported(f"{eqn.primitive.name} of floats")
        return getattr(b, op)(*args)
    return rule


def _not(b, args, eqn):
    (x,) = args
    if _kind(eqn) not in "bi":
        raise LLVMUnsupported("not of floats")
    return b.not_(x)


def _select_n(b, args, eqn):
    """`cases[pred]`: a bool picks case 1 when true; an int picks by value, the last case for
    any value beyond (the operands of a staged `select_n` are always in range)."""
    pred, *cases = args
    if pred.type == BOOL:
        if len(cases) != 2:
            raise LLVMUnsupported("select_n with a bool predicate and not two cases")
        return b.select(pred, cases[1], cases[0])
    out = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        out = b.select(b.icmp_signed("==", pred, ir.Constant(pred.type, k)), cases[k], out)
    return out


def convert(b: ir.IRBuilder, x, src, dst):
    """`x` of dtype `src` as dtype `dst`, as `interpret.convert_element_type` converts."""
    src, dst = np.dtype(src), np.dtype(dst)
    to = value_type(dst)
    if src == dst:
        return x
    if dst.kind == "b":  # x != 0; NaN is true, as NumPy's astype(bool)
        if src.kind == "f":
            return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if src.kind == "b":
        return b.uitofp(x, to) if dst.kind == "f" else b.zext(x, to)
    if src.kind == "f" and dst.kind == "f":
        return b.fpext(x, to) if dst.itemsize > src.itemsize else b.fptrunc(x, to)
    if src.kind == "f":  # saturating, NaN -> 0 (XLA's conversion)
        return intrinsic(b, "fptosi.sat", [x], result=to)
    if dst.kind == "f":
        return b.sitofp(x, to)
    if dst.itemsize > src.itemsize:
        return b.sext(x, to)
    return b.trunc(x, to) if dst.itemsize < src.itemsize else x


def _convert(b, args, eqn):
    return convert(b, args[0], eqn.invars[0].aval.dtype, eqn.params["new_dtype"])


def _integer_pow(b, args, eqn):
    """x ** y for a literal 0 <= y <= 4 as the products x * x * ... left to right, as the
    Numba backend writes it (a larger power would need the C library's `pow`)."""
    (x,), y = args, int(eqn.params["y"])
    if not 0 <= y <= 4 or _kind(eqn) == "b":
        raise LLVMUnsupported(f"integer_pow with y={y}")
    if y == 0:
        return constant(eqn.invars[0].aval.dtype, 1)
    mul = b.fmul if _kind(eqn) == "f" else b.mul
    out = x
    for _ in range(y - 1):
        out = mul(out, x)
    return out


scalar_rules = {
    P.add_p: _arith("fadd", "add"), P.sub_p: _arith("fsub", "sub"),
    P.mul_p: _arith("fmul", "mul"), P.neg_p: _neg, P.abs_p: _abs,
    P.max_p: _extremum("maximum", ">"), P.min_p: _extremum("minimum", "<"),
    P.lt_p: _compare("<"), P.le_p: _compare("<="), P.gt_p: _compare(">"),
    P.ge_p: _compare(">="), P.eq_p: _compare("=="), P.ne_p: _compare("!="),
    P.and_p: _logical("and_"), P.or_p: _logical("or_"), P.xor_p: _logical("xor"),
    P.not_p: _not, P.select_n_p: _select_n, P.convert_element_type_p: _convert,
    P.integer_pow_p: _integer_pow,
    P.sqrt_p: float_only("sqrt", _intrinsic1), P.floor_p: float_only("floor", _intrinsic1),
    P.ceil_p: float_only("ceil", _intrinsic1), P.sin_p: float_only("sin", _libm),
    P.cos_p: float_only("cos", _libm), P.tan_p: float_only("tan", _libm),
    P.exp_p: float_only("exp", _libm), P.log_p: float_only("log", _libm),
    P.tanh_p: float_only("tanh", _libm), P.expm1_p: float_only("expm1", _libm),
    P.log1p_p: float_only("log1p", _libm),
}


def _clamp(b, args, eqn):
    """min(max(x, lo), hi), with `max` and `min`'s NaN and signed-zero rules."""
    lo, x, hi = args
    if _kind(eqn) == "b":
        raise LLVMUnsupported("clamp of bool")
    high = _extremum("maximum", ">")(b, [x, lo], eqn)
    return _extremum("minimum", "<")(b, [high, hi], eqn)


def _sign(b, args, eqn):
    """-1, 0 or 1; a float's -0.0 is +0.0 and NaN is NaN, as NumPy's."""
    (x,) = args
    zero = ir.Constant(x.type, 0.0 if _kind(eqn) == "f" else 0)
    one, minus = ir.Constant(x.type, 1.0 if _kind(eqn) == "f" else 1), None
    if _kind(eqn) == "f":
        minus = ir.Constant(x.type, -1.0)
        return b.select(b.fcmp_ordered(">", x, zero), one,
                        b.select(b.fcmp_ordered("<", x, zero), minus,
                                 b.select(b.fcmp_ordered("==", x, zero), zero, x)))
    if _kind(eqn) == "i":
        minus = ir.Constant(x.type, -1)
        return b.select(b.icmp_signed(">", x, zero), one,
                        b.select(b.icmp_signed("<", x, zero), minus, zero))
    raise LLVMUnsupported("sign of bool")


def _is_finite(b, args, eqn):
    (x,) = args
    if _kind(eqn) != "f":
        raise LLVMUnsupported(f"is_finite of {eqn.invars[0].aval.dtype.name}")
    # |x| < inf is false for inf and (ordered) for NaN
    return b.fcmp_ordered("<", intrinsic(b, "fabs", [x]), ir.Constant(x.type, float("inf")))


def _libm2(name: str):
    def rule(b, args, eqn):
        if _kind(eqn) != "f":
            raise LLVMUnsupported(f"{eqn.primitive.name} of {eqn.invars[0].aval.dtype.name}")
        x, y = args
        symbol = name + ("f" if x.type == F32 else "")
        fn = b.module.globals.get(symbol)
        if fn is None:
            fn = ir.Function(b.module, ir.FunctionType(x.type, [x.type, x.type]), symbol)
        return b.call(fn, [x, y])
    return rule


scalar_rules[P.clamp_p] = _clamp
scalar_rules[P.sign_p] = _sign
scalar_rules[P.is_finite_p] = _is_finite
scalar_rules[P.atan2_p] = _libm2("atan2")
scalar_rules[P.pow_p] = _libm2("pow")


def _truncated(b: ir.IRBuilder, x, y):
    """C's quotient and remainder of ints, by a divisor made safe: 1 where y is 0 or x / y
    overflows (int_min / -1), whose quotient is then x (int_min, as NumPy's wraps) and whose
    remainder is 0. LLVM's `sdiv` and `srem` are undefined for those two, as C's are."""
    t = x.type
    int_min = ir.Constant(t, -(1 << (t.width - 1)))
    bad = b.or_(b.icmp_signed("==", y, ir.Constant(t, 0)),
                b.and_(b.icmp_signed("==", x, int_min), b.icmp_signed("==", y, ir.Constant(t, -1))))
    safe = b.select(bad, ir.Constant(t, 1), y)
    return b.sdiv(x, safe), b.srem(x, safe)


def _signs_differ(b: ir.IRBuilder, r, y):
    """r != 0 and r, y of opposite signs: where a truncated result moves toward -inf."""
    zero = ir.Constant(r.type, 0)
    return b.and_(b.icmp_signed("!=", r, zero),
                  b.icmp_signed("!=", b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))


def _div(b, args, eqn):
    """lax.div: `/` for floats; for ints rounded toward zero, and XLA's x / 0 == -1."""
    x, y = args
    if _kind(eqn) == "f":
        return b.fdiv(x, y)
    if _kind(eqn) != "i":
        raise LLVMUnsupported("div of bool")
    q, _ = _truncated(b, x, y)
    return b.select(b.icmp_signed("==", y, ir.Constant(y.type, 0)), ir.Constant(y.type, -1), q)


def _rem(b, args, eqn):
    """lax.rem: C's remainder, the sign of the dividend (`frem` is C's `fmod`); for ints
    x rem 0 is x."""
    x, y = args
    if _kind(eqn) == "f":
        return b.frem(x, y)
    if _kind(eqn) != "i":
        raise LLVMUnsupported("rem of bool")
    _, r = _truncated(b, x, y)
    return b.select(b.icmp_signed("==", y, ir.Constant(y.type, 0)), x, r)


def _floor_divide(b, args, eqn):
    """NumPy's `//` of ints: the quotient rounded toward -inf; x // 0 is 0. (Floats: NumPy
    derives theirs from fmod, with corners of its own, which this backend leaves to Numba.)"""
    x, y = args
    if _kind(eqn) != "i":
        raise LLVMUnsupported(f"floor_divide of {eqn.invars[0].aval.dtype.name}")
    q, r = _truncated(b, x, y)
    q = b.sub(q, b.zext(_signs_differ(b, r, y), q.type))
    return b.select(b.icmp_signed("==", y, ir.Constant(y.type, 0)), ir.Constant(y.type, 0), q)


def _remainder(b, args, eqn):
    """NumPy's `%` of ints: the sign of the divisor; x % 0 is 0 (the safe divisor's)."""
    x, y = args
    if _kind(eqn) != "i":
        raise LLVMUnsupported(f"remainder of {eqn.invars[0].aval.dtype.name}")
    _, r = _truncated(b, x, y)
    return b.select(_signs_differ(b, r, y), b.add(r, y), r)


scalar_rules[P.div_p] = _div
scalar_rules[P.rem_p] = _rem
scalar_rules[P.floor_divide_p] = _floor_divide
scalar_rules[P.remainder_p] = _remainder
