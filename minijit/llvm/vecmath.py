"""minijit's vector math for the LLVM backend, compiled from the Python source Numba compiles.

The Numba backend's `exp`, `expm1`, `log`, `log1p`, `tanh` and `logistic` are Python
functions (`codegen/vecmath`) that Numba compiles and inlines into each loop, where they
vectorize: every special case is a conditional expression, there is no branch and no call of
the C library. `call(b, name, x)` emits the same function inline through the IRBuilder `b`,
from the same source: it reads the function's Python syntax tree (once) and writes an LLVM
instruction for each operation, inlining the functions it calls (`_expm1_moderate`,
`bits.pow2_f64`, ...) the same way. So both backends compute bit for bit the same values
(tests/test_llvm_vecmath.py compares them on special values and random bit patterns), and
there is one source to read and to fix.

The source is written in a small subset of Python, and this module compiles only that:
- statements: an assignment to a name or to a tuple of names (from a call that returns a
  tuple), `x += ...`, a `return` of a value or a tuple, a docstring;
- expressions: argument and local names; module constants (a Python float is a float64, an
  `np.float32` a float32, an int an int64); numbers; `+ - * / << >> & |`; unary `-`; `abs`;
  one comparison (false when a NaN is compared, except `!=`); `a if c else b`, both sides
  computed and one chosen by a `select` (each side is cheap and safe: the source is written
  so, for the vectorizer); `np.float32(constant)`; and calls of other such functions and of
  the four bit casts of `bits.py`.
Types follow Numba's rules for these operations: int with int gives int64 (an int32 is
widened first), a float with an int gives float64, float32 with float32 gives float32, and
float32 with float64 gives float64. Nothing else is compiled: `LLVMUnsupported` names it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap

import numpy as np
from llvmlite import ir

from minijit import primitives as P
from minijit.codegen.vecmath import DEFAULT, SOURCES, bits, deferred
from minijit.config import config
from minijit.llvm.rules import (
    F32,
    F64,
    I32,
    I64,
    LLVMUnsupported,
    float_only,
    intrinsic,
    scalar_rules,
)

# What `call` compiles: the functions `jit`'s code calls by default (`vecmath.DEFAULT`). sin,
# cos and erf (config "vector_math" "all") use table lookups and loops this compiler lacks.
NAMES = DEFAULT


def in_use(name: str) -> bool:
    """Does generated code call `vecmath`'s `name` now (`config.vector_math`), as the Numba
    backend's code does (`codegen/scalar_rules.py`)?"""
    mode = config.vector_math
    return bool(mode) and (mode == "all" or name in DEFAULT)


def call(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """`vecmath`'s `name` (`"tanh"`) of the float32 or float64 value `x`, emitted inline."""
    dtype = "float32" if x.type == F32 else "float64"
    if name not in NAMES or (name, dtype) not in SOURCES:
        raise LLVMUnsupported(f"minijit's vector math {name} of {dtype}")
    return _Inliner(b).call(SOURCES[name, dtype], [x])


_CASTS = {deferred.plain(getattr(bits, name)): name
          for name in ("f64_bits", "f64_from_bits", "f32_bits", "f32_from_bits")}


@functools.cache
def _syntax(fn) -> tuple[list[str], list[ast.stmt]]:
    """(parameter names, body statements) of the Python function `fn`."""
    (tree,) = ast.parse(textwrap.dedent(inspect.getsource(fn))).body
    assert isinstance(tree, ast.FunctionDef)
    return [a.arg for a in tree.args.args], tree.body


class _Inliner:
    """Emits Python functions of the subset above through one IRBuilder."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b

    def call(self, fn, args: list):
        fn = deferred.plain(fn)  # a Numba function (after the Numba backend loaded): its source
        params, body = _syntax(fn)
        env = dict(zip(params, args, strict=True))
        scope = fn.__globals__
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # the docstring
            if isinstance(stmt, ast.Return):
                return self.expr(stmt.value, env, scope)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                self._assign(stmt.targets[0], self.expr(stmt.value, env, scope), env)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                env[stmt.target.id] = self._binary(stmt.op, env[stmt.target.id],
                                                   self.expr(stmt.value, env, scope))
            else:
                raise LLVMUnsupported(f"the statement `{ast.unparse(stmt)}` of {fn.__name__}")
        raise LLVMUnsupported(f"{fn.__name__} returns nothing")

    def _assign(self, target, value, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple) and isinstance(value, tuple):
            for t, v in zip(target.elts, value, strict=True):
                self._assign(t, v, env)
        else:
            raise LLVMUnsupported(f"an assignment to `{ast.unparse(target)}`")

    def expr(self, node, env: dict, scope: dict):
        b = self.b
        if isinstance(node, ast.Name):
            return env[node.id] if node.id in env else _constant(scope[node.id], node)
        if isinstance(node, ast.Constant | ast.Attribute):  # 1.0, np.nan
            return _constant(_evaluate(node, scope), node)
        if isinstance(node, ast.Tuple):
            return tuple(self.expr(e, env, scope) for e in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant):
                return _constant(-node.operand.value, node)
            x = self.expr(node.operand, env, scope)
            return b.fneg(x) if _is_float(x) else b.sub(ir.Constant(x.type, 0), x)
        if isinstance(node, ast.BinOp):
            return self._binary(node.op, self.expr(node.left, env, scope),
                                self.expr(node.right, env, scope))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node.ops[0], self.expr(node.left, env, scope),
                                 self.expr(node.comparators[0], env, scope))
        if isinstance(node, ast.IfExp):
            yes, no = _unify(b, self.expr(node.body, env, scope),
                             self.expr(node.orelse, env, scope))
            return b.select(self.expr(node.test, env, scope), yes, no)
        if isinstance(node, ast.Call):
            return self._call(node, env, scope)
        raise LLVMUnsupported(f"the expression `{ast.unparse(node)}`")

    def _call(self, node: ast.Call, env: dict, scope: dict):
        b = self.b
        fn = _evaluate(node.func, scope)
        if fn is np.float32 or fn is np.float64:  # a constant written in the other type
            return _constant(_evaluate(node, scope), node)
        args = [self.expr(a, env, scope) for a in node.args]
        if fn is abs and _is_float(args[0]):
            return intrinsic(b, "fabs", args)
        cast = _CASTS.get(deferred.plain(fn))
        if cast == "f64_bits":
            return b.bitcast(args[0], I64)
        if cast == "f32_bits":
            return b.bitcast(args[0], I32)
        if cast == "f64_from_bits":
            return b.bitcast(_int64(b, args[0]), F64)
        if cast == "f32_from_bits":
            return b.bitcast(b.trunc(_int64(b, args[0]), I32), F32)
        if deferred.is_marked(fn):
            return self.call(fn, args)
        raise LLVMUnsupported(f"the call `{ast.unparse(node)}`")

    def _binary(self, op, x, y):
        b = self.b
        if not _is_float(x) and not _is_float(y):
            x, y = _int64(b, x), _int64(b, y)
            ops = {ast.Add: b.add, ast.Sub: b.sub, ast.Mult: b.mul, ast.LShift: b.shl,
                   ast.RShift: b.ashr, ast.BitAnd: b.and_, ast.BitOr: b.or_}
        else:
            x, y = _unify(b, x, y)
            ops = {ast.Add: b.fadd, ast.Sub: b.fsub, ast.Mult: b.fmul, ast.Div: b.fdiv}
        if type(op) not in ops:
            raise LLVMUnsupported(f"the operator {type(op).__name__} on {x.type}")
        return ops[type(op)](x, y)

    def _compare(self, op, x, y):
        b = self.b
        sign = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
                ast.NotEq: "!="}[type(op)]
        if not _is_float(x) and not _is_float(y):
            return b.icmp_signed(sign, _int64(b, x), _int64(b, y))
        x, y = _unify(b, x, y)
        # Python's comparisons with a NaN are all false but `!=`, which is true
        return b.fcmp_unordered(sign, x, y) if sign == "!=" else b.fcmp_ordered(sign, x, y)


def _is_float(x) -> bool:
    return x.type in (F32, F64)


def _int64(b: ir.IRBuilder, x):
    return b.sext(x, I64) if x.type.width < 64 else x


def _unify(b: ir.IRBuilder, x, y):
    """Both values in the type Numba computes them in: float64 unless both are float32."""
    if x.type == y.type:
        return x, y
    return _to_f64(b, x), _to_f64(b, y)


def _to_f64(b: ir.IRBuilder, x):
    if x.type == F64:
        return x
    return b.fpext(x, F64) if x.type == F32 else b.sitofp(x, F64)


def _evaluate(node, scope: dict):
    """The value of a constant expression of the source (`np.nan`, `np.float32(0.5)`)."""
    return eval(compile(ast.Expression(node), "<vecmath>", "eval"), scope)  # noqa: S307


def _constant(value, node) -> ir.Constant:
    if isinstance(value, np.float32):
        return ir.Constant(F32, float(value))
    if isinstance(value, float | np.float64):
        return ir.Constant(F64, float(value))
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return ir.Constant(I64, int(value))
    raise LLVMUnsupported(f"the value of `{ast.unparse(node)}`")


def _vector_or(name: str, libm_rule):
    """The rule for `name`: `vecmath`'s function where it is in use, else `libm_rule`."""
    def rule(b, args, eqn):
        if in_use(name):
            return float_only(name, call)(b, args, eqn)
        return libm_rule(b, args, eqn)
    return rule


for _p in (P.exp_p, P.expm1_p, P.log_p, P.log1p_p, P.tanh_p):
    scalar_rules[_p] = _vector_or(_p.name, scalar_rules[_p])
# The C library has no logistic: vecmath's, whatever the setting
scalar_rules[P.logistic_p] = float_only("logistic", call)
