"""The wrong answers an exercise's own text warns about fail one of its public cases.

An exercise's text (the markdown above its cell, the cell's comments, the Exercise's `hint`
and `error_hints`) names pitfalls. A learner who falls into one must see `check()` fail, not
learn it from the grade. Each wrong answer below is the solution's exercise cell with a few
lines changed (`old -> new`), or a whole cell; the test runs the exercise's public cases on
it and asserts that the named case fails, and that the solution passes that same case.
"""

from __future__ import annotations

from dataclasses import dataclass

import nbformat
import pytest
from solution_cells import SOLUTIONS, solution_namespace

from minijit import build, config
from minijit.grading.checking import run_public_cases
from minijit.grading.registry import default_exercises

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")

NOTEBOOKS = {
    "ex10_new_primitive": "10_putting_it_together.ipynb",
    "ex10_capstone": "10_putting_it_together.ipynb",
    "ex02_where": "02_tracing.ipynb",
    "ex04_static_args": "04_jit_and_the_cache.ipynb",
    "ex04_buckets": "04_jit_and_the_cache.ipynb",
    "ex05_cond_loop": "05_control_flow.ipynb",
    "ex01_break_even": "01_why_jit.ipynb",
    "ex03_broadcast_rule": "03_the_ir.ipynb",
    "ex03_dtype": "03_the_ir.ipynb",
    "ex06_debug_print": "06_side_effects_and_debugging.ipynb",
    "ex06_leak": "06_side_effects_and_debugging.ipynb",
    "ex06_recompiles": "06_side_effects_and_debugging.ipynb",
    "ex06_donate": "06_side_effects_and_debugging.ipynb",
    "ex02_process_primitive": "02_tracing.ipynb",
    "ex02_bind": "02_tracing.ipynb",
    "ex02_jvp": "02_tracing.ipynb",
    "ex03_eval_jaxpr": "03_the_ir.ipynb",
    "ex03_pp_jaxpr": "03_the_ir.ipynb",
    "ex04_cache_key": "04_jit_and_the_cache.ipynb",
    "ex05_closure_convert": "05_control_flow.ipynb",
    "ex04_jit_call": "04_jit_and_the_cache.ipynb",
    "ex05_while_impl": "05_control_flow.ipynb",
    "ex05_stage_cond": "05_control_flow.ipynb",
    "ex06_disable_jit": "06_side_effects_and_debugging.ipynb",
    "ex07_dce": "07_cleanup_passes.ipynb",
    "ex07_fold": "07_cleanup_passes.ipynb",
    "ex07_rule": "07_cleanup_passes.ipynb",
    "ex07_cse": "07_cleanup_passes.ipynb",
    "ex08_may_fuse": "08_fusion_and_buffers.ipynb",
    "ex08_fusion_groups": "08_fusion_and_buffers.ipynb",
    "ex09_softplus_rule": "09_code_generation.ipynb",
    "ex09_loop_nest": "09_code_generation.ipynb",
}

# What an exercise cell reads from cells before it, other than the notebook's imports.
PRELUDES = {
    "ex10_capstone": ("from minijit.codegen.rules import Expression, numba_rules\n"
                      "from minijit.core import (BINARY, ELEMENTWISE, Primitive, ShapedArray,\n"
                      "                          abstract_eval_rules, impl_rules)\n"),
    "ex02_jvp": "from minijit.core import new_trace\n",  # what exercise 4 of the notebook wrote
    "ex04_static_args": ("def summarize(x, n, scale, *, mode):\n    head = x[:n] * scale\n"
                         "    if mode == 'sum':\n        return mnp.sum(head)\n"
                         "    return mnp.max(head)\n"),
    "ex06_recompiles": ("def decay(x, rate):\n    return x * mnp.exp(-rate)\n\n\n"
                        "@mj.jit\ndef gain(x, g):\n    return x * g\n"),
    "ex06_donate": ("def step(w, m, g):\n    m = 0.9 * m + g\n"
                    "    return w - 0.01 * m, m\n"),
    "ex06_disable_jit": ("@mj.jit\ndef softmax(x, temperature):\n"
                         "    exps = mnp.exp(x / temperature)\n"
                         "    return exps / mnp.sum(exps)\n"),
}


# Exercises whose cell uses what an earlier exercise's solution cell defines.
PRELUDE_EXERCISES = {"ex10_capstone": ("ex10_new_primitive",)}


@dataclass(frozen=True)
class Wrong:
    """A wrong answer: the solution's cell with each `old` replaced by `new`, or `cell`."""

    exercise: str
    what: str
    caught_by: str  # the name of the public case that must fail
    edits: tuple[tuple[str, str], ...] = ()
    cell: str | None = None


def _pp(old: str, new: str) -> tuple[tuple[str, str], ...]:
    return ((old, new),)


_LIT = 'return f"{np.asarray(a.val, dtype=a.aval.dtype).item()!r}:{a.aval.str_short()}"'
_PP_SUBJAXPR = "            return jaxpr_doc(value)"
_PP_LHS = ("        lhs = words([binder(v) for v in eqn.outvars])"
           "  # named before the params' jaxprs\n")
_PP_COND = "program cond"
_STAGE = ("def process_primitive(trace, prim, args, params):\n"
          "    atoms = {atoms}\n"
          "    out_avals = checked_abstract_eval(prim, [a.aval for a in atoms], params)\n"
          "    source = {source}\n"
          "    outvars = {outvars}\n"
          "    trace.eqns.append(Eqn(prim, tuple(atoms), tuple(outvars), {params}, source))\n"
          "    return {ret}\n")
_STAGE_OK = {"atoms": "[trace.to_atom(a) for a in args]", "source": "errors.user_location()",
             "outvars": "[Var(aval) for aval in out_avals]", "params": "dict(params)",
             "ret": "[trace.var_to_tracer(v, source) for v in outvars]"}


_FOLD = "return lax.fori_loop(1, x.shape[1], lambda i, acc: logaddexp(acc, x[:, i]), x[:, 0])"
_NAIVE = "return mnp.log(mnp.sum(mnp.exp(x), axis=1))"
_OWN_LOGADDEXP = "its jaxpr holds your logaddexp_p, and no exp or log of its own; one f64 per row"


def _stage(what: str, caught_by: str, **changes: str) -> Wrong:
    return Wrong("ex02_process_primitive", what, caught_by,
                 cell=_STAGE.format(**{**_STAGE_OK, **changes}))


def _key(what: str, caught_by: str, body: str) -> Wrong:
    return Wrong("ex04_cache_key", what, caught_by,
                 cell=f"def cache_key(static_values, leaf_avals, treedef):\n    return {body}\n")


def _convert(what: str, caught_by: str, body: str) -> Wrong:
    return Wrong("ex05_closure_convert", what, caught_by,
                 cell="def closure_convert(jaxpr, consts, all_consts):\n" + body)


def _softplus(what: str, caught_by: str, expression: str) -> Wrong:
    return Wrong("ex09_softplus_rule", what, caught_by,
                 cell=f"def softplus_rule(args, eqn):\n    x = args[0]\n    return {expression}\n")


_SWITCH_IN = "build.use switches it in: minijit's small example for "
_FIVE_CALLS = "one signature, five calls"
_JOINED = "captures joined in JAX's order"
_SOFTMAX = "mnp.exp(scaled - mnp.max(scaled))"
_F64_SOFTPLUS = "float64: softplus(2x + b), b broadcast along the rows"
_F32_SOFTPLUS = "float32: a row sum of softplus, and softplus of the maximum (rank 0)"
_TINY_SOFTPLUS = "float64: softplus alone, on both signs (tiny results for very negative x)"
_NEST = "x * row + column: (3, 4), (4,) and (3, 1)"
_EVAL_F32 = "float32 literals keep their dtype, and an output is a literal"

WRONG = [
    # ex02_process_primitive: to_atom for every argument, one Var per output, a copy of the
    # params, the traced line as the source, one tracer per outvar in order
    _stage("an outer trace's tracer used by its own Var, not captured", "program while_loop",
           atoms="[a.atom if hasattr(a, 'atom') else trace.to_atom(a) for a in args]"),
    _stage("a Var made by hand for every tracer argument", "program add_literal",
           atoms="[Var(a.aval) if hasattr(a, 'atom') else trace.to_atom(a) for a in args]"),
    _stage("one outvar only", "program while_loop", outvars="[Var(out_avals[0])]"),
    _stage("the caller's params dict, not a copy", "program add_literal", params="params"),
    _stage("no source line", "program add_literal", source="None"),
    _stage("tracers without their equation's source", "program add_literal",
           ret="[trace.var_to_tracer(v, None) for v in outvars]"),
    _stage("tracers in another order than the outvars", "program while_loop",
           ret="[trace.var_to_tracer(v, source) for v in outvars][::-1]"),
    _stage("one tracer, not a list", "program add_literal",
           ret="trace.var_to_tracer(outvars[0], source)"),
    # ex02_bind: the innermost trace, one output alone, the stack restored on an error
    Wrong("ex02_bind", "a list for a primitive with one output",
          "make_jaxpr: sin(x) * 2 (one output comes back alone)",
          _pp("return outs if prim.multiple_results else outs[0]", "return outs")),
    Wrong("ex02_bind", "the first trace above the EvalTrace, not the innermost",
          "make_jaxpr: jvp of sin(x) * x (a jvp trace above the staging trace)",
          _pp("outs = trace_state.stack[-1].process_primitive",
              "outs = trace_state.stack[min(1, len(trace_state.stack) - 1)].process_primitive")),
    Wrong("ex02_bind", "new_trace pops without finally",
          "new_trace restores the stack when the block raises",
          _pp("    try:\n        yield trace\n    finally:\n        trace_state.stack.pop()",
              "    yield trace\n    trace_state.stack.pop()")),
    # ex02_jvp: constants lifted, the product rule, rules bound on the trace below
    Wrong("ex02_jvp", "constants not lifted to zero tangents", "constants: 2.0 * x + 1.0",
          _pp("        if isinstance(x, JVPTracer) and x._trace is self:\n"
              "            return x.primal, x.tangent\n        return x, zeros_like(x)",
              "        return x.primal, x.tangent")),
    Wrong("ex02_jvp", "the product rule as dx * dy", "product rule: x * y, both moving",
          _pp("[lax.add(lax.mul(dx, y), lax.mul(x, dy))]", "[lax.mul(dx, dy)]")),
    Wrong("ex02_jvp", "a rule bound on the JVPTrace itself", "jit(jvp(f)): sin(x) * x",
          _pp("        with new_trace(self.parent_trace):\n"
              "            primals_out, tangents_out",
              "        if True:\n            primals_out, tangents_out")),
    Wrong("ex02_jvp", "a rule bound on the EvalTrace, not the trace below",
          "jit(jvp(f)): sin(x) * x",
          _pp("with new_trace(self.parent_trace):", "with new_trace(trace_state.stack[0]):")),
    # ex03_eval_jaxpr: literals read by their own value and dtype, constvars bound, an impl
    # rule's list unpacked, a list returned
    Wrong("ex03_eval_jaxpr", "a literal looked up in the environment", "program add_literal",
          _pp("return np.asarray(atom.val, dtype=atom.aval.dtype)", "return env[atom]")),
    Wrong("ex03_eval_jaxpr", "a literal's raw .val (a Python number)", "program add_literal",
          _pp("return np.asarray(atom.val, dtype=atom.aval.dtype)", "return atom.val")),
    Wrong("ex03_eval_jaxpr", "a literal without its aval's dtype", _EVAL_F32,
          _pp("return np.asarray(atom.val, dtype=atom.aval.dtype)",
              "return np.asarray(atom.val)")),
    Wrong("ex03_eval_jaxpr", "an output read from the environment, literal or not", _EVAL_F32,
          _pp("return [read(atom) for atom in jaxpr.outvars]",
              "return [env[atom] for atom in jaxpr.outvars]")),
    Wrong("ex03_eval_jaxpr", "values bound as given (a Python float stays one)",
          _SWITCH_IN + "eval_jaxpr",
          _pp("env[var] = np.asarray(value, dtype=var.aval.dtype)", "env[var] = value")),
    Wrong("ex03_eval_jaxpr", "constvars not bound", "program scale_shift",
          _pp("    for var, value in zip(jaxpr.constvars, consts):\n        write(var, value)\n",
              "")),
    Wrong("ex03_eval_jaxpr", "the impl rule's list bound to the first outvar",
          "program add_literal",
          _pp("        for var, value in zip(eqn.outvars, outputs):\n            write(var, value)",
              "        write(eqn.outvars[0], outputs)")),
    Wrong("ex03_eval_jaxpr", "only the first output of an equation bound", "program two_outputs",
          _pp("        for var, value in zip(eqn.outvars, outputs):\n            write(var, value)",
              "        write(eqn.outvars[0], outputs[0])")),
    Wrong("ex03_eval_jaxpr", "one output returned alone, not in a list", "program add_literal",
          _pp("return [read(atom) for atom in jaxpr.outvars]",
              "outs = [read(a) for a in jaxpr.outvars]\n"
              "    return outs[0] if len(outs) == 1 else outs")),
    # ex03_pp_jaxpr: one walk of names through the sub-jaxprs, outputs named before params,
    # unread outputs as _, literals typed, params sorted, dtypes by name, names after z
    Wrong("ex03_pp_jaxpr", "str() on a sub-jaxpr", _PP_COND,
          _pp(_PP_SUBJAXPR, "            return pp.text(str(value))")),
    Wrong("ex03_pp_jaxpr", "a sub-jaxpr printed with a fresh table of names", _PP_COND,
          _pp(_PP_SUBJAXPR, "            return pp.text(pp_jaxpr(value))")),
    Wrong("ex03_pp_jaxpr", "an equation's outputs named after its params' jaxprs", _PP_COND,
          ((_PP_LHS, ""), ("        return pp.concat([lhs,",
                           "        lhs = words([binder(v) for v in eqn.outvars])\n"
                           "        return pp.concat([lhs,"))),
    Wrong("ex03_pp_jaxpr", "unread outputs named, not _", "program unread_output",
          _pp("        unread.update(", "        set().update(")),
    Wrong("ex03_pp_jaxpr", "an unread output printed as _ but given a name",
          "program unread_output",
          _pp("        return f\"{'_' if id(var) in unread else name(var)}:",
              "        n = name(var)\n        return f\"{'_' if id(var) in unread else n}:")),
    Wrong("ex03_pp_jaxpr", "in (b) for one output", "program add_literal",
          _pp('",)" if len(j.outvars) == 1 else ")"', '")"')),
    Wrong("ex03_pp_jaxpr", "a literal without its type", "program add_literal",
          _pp(_LIT, 'return f"{np.asarray(a.val, dtype=a.aval.dtype).item()!r}"')),
    Wrong("ex03_pp_jaxpr", "params in the order they were given", "program unread_output",
          _pp("for k in sorted(eqn.params)", "for k in eqn.params")),
    Wrong("ex03_pp_jaxpr", "a dtype param by its repr", _PP_COND,
          _pp("        if isinstance(value, np.dtype):\n            return pp.text(value.name)\n",
              "")),
    Wrong("ex03_pp_jaxpr", "a tuple of jaxprs without parentheses", _PP_COND,
          _pp('return in_brackets("(", [param(x) for x in value], ")")',
              "return pp.join(pp.brk(), [param(x) for x in value])")),
    Wrong("ex03_pp_jaxpr", "invars named before constvars", "program scale_shift",
          _pp("        consts = words([binder(v) for v in j.constvars])\n"
              "        args = words([binder(v) for v in j.invars])",
              "        args = words([binder(v) for v in j.invars])\n"
              "        consts = words([binder(v) for v in j.constvars])")),
    Wrong("ex03_pp_jaxpr", "names after z go on aa, ab, ...",
          "program long_chain: names after z go on ba, bb, ...",
          _pp('            i, text = len(names), ""\n            while True:\n'
              '                text = "abcdefghijklmnopqrstuvwxyz"[i % 26] + text\n'
              "                i //= 26\n                if i == 0:\n                    break",
              '            i, letters = len(names), "abcdefghijklmnopqrstuvwxyz"\n'
              "            text = letters[i] if i < 26 else letters[i // 26 - 1] + "
              "letters[i % 26]")),
    # ex04_cache_key: everything that changes the trace is in the key, and it is hashable
    _key("leaf_avals kept as a list (unhashable)", "weak and strong scalars",
         "(treedef, leaf_avals, tuple(static_values))"),
    _key("static values without their type (1 == 1.0 == True)",
         "a static argument's value and type", "(treedef, tuple(leaf_avals), "
         "tuple(static_values))"),
    _key("no weak type", "weak and strong scalars",
         "(treedef, tuple((s, d) for s, d, w in leaf_avals), "
         "tuple((w, v, type(v)) for w, v in static_values))"),
    _key("no dtype", "program mul_two_args",
         "(treedef, tuple((s, w) for s, d, w in leaf_avals), "
         "tuple((w, v, type(v)) for w, v in static_values))"),
    _key("no shape", "a static argument's value and type",
         "(treedef, tuple((d, w) for s, d, w in leaf_avals), "
         "tuple((w, v, type(v)) for w, v in static_values))"),
    _key("no pytree structure", "the pytree's structure",
         "(tuple(leaf_avals), tuple((w, v, type(v)) for w, v in static_values))"),
    _key("static values left out", "a static argument's value and type",
         "(treedef, tuple(leaf_avals))"),
    _key("the key's hash (static values without their type)",
         "a static argument's value and type",
         "hash((treedef, tuple(leaf_avals), tuple(static_values)))"),
    _key("static values without where (by position or by keyword)",
         "one static argument, by position and by keyword",
         "(treedef, tuple(leaf_avals), tuple((v, type(v)) for w, v in static_values))"),
    # ex04_jit_call: look up by the key, trace on a miss only, store under that key, return
    # the function's tree
    Wrong("ex04_jit_call", "the compiled program run, never stored", _FIVE_CALLS,
          _pp("        entry = f.store(key, compiled)\n",
              "        return compiled(*args, **kwargs)\n")),
    Wrong("ex04_jit_call", "stored under a key made after tracing", _FIVE_CALLS,
          _pp("f.store(key, compiled)", "f.store((key, compiled.lowered.traced.out_tree), "
              "compiled)")),
    Wrong("ex04_jit_call", "traced and compiled on a hit too", _FIVE_CALLS,
          cell="def jit_call(f, args, kwargs):\n    call = f.split(args, kwargs)\n"
               "    key = f.key(call)\n"
               "    compiled = f.trace_call(call).lower().compile()\n"
               "    entry = f.lookup(key)\n    if entry is None:\n"
               "        entry = f.store(key, compiled)\n"
               "    return entry.wrap_outputs(f.execute(entry, call))\n"),
    Wrong("ex04_jit_call", "the flat outputs returned, without the tree",
          "outputs in a pytree", _pp("return entry.wrap_outputs(outs)", "return outs")),
    Wrong("ex04_jit_call", "the entry looked up by the call's own key, not f.key",
          "build.use switches it in: minijit's small example for jit_call",
          _pp("key = f.key(call)", "key = (call.in_tree, tuple(call.leaf_avals))")),
    # ex05_closure_convert: match captured values by capture_key, one leading invar per
    # entry of all_consts, no constvars left
    _convert("captured values matched by identity", "program cond_in_while",
             "    mine = {id(c): v for c, v in zip(consts, jaxpr.constvars)}\n"
             "    leading = tuple(mine.get(id(c)) or Var(get_aval(c)) for c in all_consts)\n"
             "    return Jaxpr((), leading + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)\n"),
    _convert("captured values matched by position", "program cond_captures_tracers",
             "    leading = tuple(jaxpr.constvars[i] if i < len(jaxpr.constvars)\n"
             "                    else Var(get_aval(c)) for i, c in enumerate(all_consts))\n"
             "    return Jaxpr((), leading + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)\n"),
    _convert("no invar for a value this body did not capture",
             "program cond_captures_tracers",
             "    return Jaxpr((), tuple(jaxpr.constvars) + jaxpr.invars, jaxpr.eqns,\n"
             "                 jaxpr.outvars)\n"),
    _convert("constvars left in place", "program cond_captures_array",
             "    mine = {capture_key(c): v for c, v in zip(consts, jaxpr.constvars)}\n"
             "    leading = tuple(mine.get(capture_key(c)) or Var(get_aval(c))\n"
             "                    for c in all_consts)\n"
             "    return Jaxpr(jaxpr.constvars, leading + jaxpr.invars, jaxpr.eqns,\n"
             "                 jaxpr.outvars)\n"),
    _convert("captured values after the body's invars", "program cond_captures_array",
             "    mine = {capture_key(c): v for c, v in zip(consts, jaxpr.constvars)}\n"
             "    leading = tuple(mine.get(capture_key(c)) or Var(get_aval(c))\n"
             "                    for c in all_consts)\n"
             "    return Jaxpr((), jaxpr.invars + leading, jaxpr.eqns, jaxpr.outvars)\n"),
    # ex05_while_impl: cond's consts, then the body's, then the carry; the carry, a list
    Wrong("ex05_while_impl", "the body's captured values taken first",
          "eval_jaxpr of limit_and_step",
          (("cond_consts = args[:cond_nconsts]",
            "cond_consts = args[body_nconsts:cond_nconsts + body_nconsts]"),
           ("body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]",
            "body_consts = args[:body_nconsts]"))),
    Wrong("ex05_while_impl", "the carry's first value returned alone",
          "called directly: halve 10.0 until <= 1", _pp("    return carry\n",
                                                        "    return carry[0]\n")),
    # ex05_stage_cond: trace and join in order, by capture_key; compare trees and strong
    # types; bind in index order; return the tree
    Wrong("ex05_stage_cond", "branches traced and joined in index order", _JOINED,
          (("for k in order}", "for k in range(len(branches))}"),
           ("    for k in order:\n", "    for k in range(len(branches)):\n"))),
    Wrong("ex05_stage_cond", "branches bound in trace order", _JOINED,
          _pp("                   for k in range(len(branches)))",
              "                   for k in order)")),
    Wrong("ex05_stage_cond", "captured values joined by identity", "program cond_in_while",
          (("            if capture_key(c) not in seen:\n"
            "                seen.add(capture_key(c))\n",
            "            if not any(c is d for d in all_consts):\n"),)),
    Wrong("ex05_stage_cond", "structures not compared",
          "branches that return (v, v) and [v, v]",
          _pp("        if tree != first_tree:\n", "        if False:\n")),
    Wrong("ex05_stage_cond", "weak types compared",
          "a Python float and an array agree (weak types)",
          _pp("a.strip_weak_type() != b.strip_weak_type()", "a != b")),
    Wrong("ex05_stage_cond", "the flat outputs returned", "pytree operands and results",
          _pp("return tree_unflatten(first_tree, outs)", "return outs")),
    # ex01_break_even: the first n whose jitted total is *not larger*, n >= 1, None when the
    # jitted call is no faster
    Wrong("ex01_break_even", "a strictly smaller total asked for", "equal totals at 2 calls: "
          "compile 2 s, eager 1.5 s, jitted 0.5 s",
          _pp("max(1, math.ceil(compile_s / (eager_s - jitted_s)))",
              "math.floor(compile_s / (eager_s - jitted_s)) + 1")),
    Wrong("ex01_break_even", "0 calls when the compile is free",
          "free compile: still at least 1 call",
          _pp("max(1, math.ceil(compile_s / (eager_s - jitted_s)))",
              "math.ceil(compile_s / (eager_s - jitted_s))")),
    Wrong("ex01_break_even", "equal speeds divide by zero", "jitted exactly as fast",
          _pp("if jitted_s >= eager_s:", "if jitted_s > eager_s:")),
    # ex02_where: no Python if on a traced value; each side shifted toward 0
    Wrong("ex02_where", "a Python if on the array", "t = 0",
          _pp("return mnp.where(x > t, x - t, mnp.where(x < -t, x + t, 0.0))",
              "return x - t if (x > t).all() else x")),
    Wrong("ex02_where", "the negative side shifted away from 0", "t = 1",
          _pp("mnp.where(x < -t, x + t, 0.0)", "mnp.where(x < -t, x - t, 0.0)")),
    # ex04_static_args: static exactly what must be; ex04_buckets: powers of two from 8
    Wrong("ex04_static_args", "scale static too", "both modes, scale changing",
          _pp("static_argnums=1,", "static_argnums=(1, 2),")),
    Wrong("ex04_static_args", "mode left traced", "both modes, scale changing",
          _pp('static_argnums=1, static_argnames="mode"', "static_argnums=1")),
    Wrong("ex04_buckets", "a length that is a power of two padded to the next",
          "lengths 9 to 16", _pp("1 << (len(x) - 1).bit_length()", "1 << len(x).bit_length()")),
    Wrong("ex04_buckets", "no bucket below 8", "lengths 3, 5, 8",
          _pp("max(8, 1 << (len(x) - 1).bit_length())", "1 << (len(x) - 1).bit_length()")),
    # ex05_cond_loop: a cond in grow's jaxpr, an integer count of years
    Wrong("ex05_cond_loop", "mnp.where for the harvest", "grow's jaxpr holds a cond and a loop",
          _pp("return lax.cond(mnp.sum(x) > 100.0, lambda x: x * 0.5, lambda x: x, x)",
              "return mnp.where(mnp.sum(x) > 100.0, x * 0.5, x)")),
    Wrong("ex05_cond_loop", "years counted as a float",
          "years_until([1, 2, 3], 1.5, target = 10, 100)",
          _pp("lax.while_loop(below, one_year, (x, 0))",
              "lax.while_loop(below, one_year, (x, 0.0))")),
    # ex10_capstone: logaddexp folded along each row, never exp or log of its own
    Wrong("ex10_capstone", "log(sum(exp(x))) as written", "rows of large values, where "
          "log(sum(exp(x))) overflows to inf; also with Numba", _pp(_FOLD, _NAIVE)),
    Wrong("ex10_capstone", "shifted by the row's max: right values, not on logaddexp",
          _OWN_LOGADDEXP, _pp(_FOLD, "m = mnp.max(x, axis=1)\n    return m + mnp.log(mnp.sum("
                              "mnp.exp(x - m[:, None]), axis=1))")),
    Wrong("ex10_capstone", "the fold started from 0, not the first column",
          "f64[3,4]: one value per row, eager and interpreter",
          _pp("acc, x[:, i]), x[:, 0])", "acc, x[:, i]), mnp.zeros(x.shape[0]))")),
    Wrong("ex10_capstone", "folded down the columns, not along the rows",
          "f64[3,4]: one value per row, eager and interpreter",
          _pp(_FOLD, "return lax.fori_loop(1, x.shape[0], lambda i, acc: logaddexp(acc, x[i]), "
                     "x[0])")),
    # ex03_broadcast_rule: aligned at the last axis, equal dtypes, TypeError, the other size
    Wrong("ex03_broadcast_rule", "shapes aligned at the first axis",
          "inside make_jaxpr: (2, 1) with (3,)",
          (("(1,) * (ndim - x.ndim) + x.shape", "x.shape + (1,) * (ndim - x.ndim)"),
           ("(1,) * (ndim - y.ndim) + y.shape", "y.shape + (1,) * (ndim - y.ndim)"))),
    Wrong("ex03_broadcast_rule", "dtypes not compared",
          "unequal dtypes: f32[2] with f64[2] raises TypeError",
          _pp('        raise TypeError(f"badd needs equal dtypes, got {x} and {y}")\n',
              "        pass\n")),
    Wrong("ex03_broadcast_rule", "ValueError, as NumPy raises",
          "incompatible: (2,) with (3,) raises TypeError",
          _pp('raise TypeError(f"badd: shapes', 'raise ValueError(f"badd: shapes')),
    Wrong("ex03_broadcast_rule", "the larger size kept (1 against 0 gives 1)",
          "a size of 0 against 1: (3, 1) with (1, 0)",
          _pp("shape.append(b if a == 1 else a)", "shape.append(max(a, b))")),
    Wrong("ex03_broadcast_rule", "one ShapedArray, not a list", "equal: (2, 3) with (2, 3)",
          _pp("return [ShapedArray(tuple(shape), x.dtype)]",
              "return ShapedArray(tuple(shape), x.dtype)")),
    # ex03_dtype: convert before the operation that goes wrong, not the result afterwards
    Wrong("ex03_dtype", "elapsed converted afterwards", "elapsed: the three readings of the "
          "notebook", _pp("t = seconds.astype(mnp.float64) + fractions",
                          "t = (seconds + fractions).astype(mnp.float64)")),
    Wrong("ex03_dtype", "mean_abs_diff converted afterwards",
          "mean_abs_diff: the 2x2 images of the notebook",
          _pp("mnp.abs(a.astype(mnp.float64) - b.astype(mnp.float64))",
              "mnp.abs(a - b).astype(mnp.float64)")),
    # ex06: debug.print on every call, no tracer kept, donation that hurts no caller, one
    # trace per driver
    Wrong("ex06_debug_print", "Python's print", "[1, 2, 3] three times (scales 2, 2, 10), "
          "then [1, 1]", _pp('mj.debug.print("total = {:.2f}", total)',
                             'print("total = {:.2f}".format(total))')),
    Wrong("ex06_leak", "the step kept in a list inside the jitted update",
          "x = [1, -2, 0.5], 3 steps",
          (("    g = mnp.tanh(x)\n", "    g = mnp.tanh(x)\n    _seen.append(g)\n"),
           ("def run(x, steps):", "_seen = []\n\n\ndef run(x, steps):"))),
    Wrong("ex06_donate", "the caller's w donated", "fit: 2 batches, 3 epochs",
          _pp("donate_argnums=1)", "donate_argnums=(0, 1))")),
    Wrong("ex06_donate", "the caller's batches donated", "fit: 2 batches, 3 epochs",
          _pp("donate_argnums=1)", "donate_argnums=(1, 2))")),
    Wrong("ex06_recompiles", "gains passed as they come (Python and NumPy numbers)",
          "apply_gains, 6 gains", _pp("x = gain(x, float(g))", "x = gain(x, g)")),
    Wrong("ex06_recompiles", "a new jitted lambda on every step", "train, 6 steps",
          _pp("x = smooth_step(x)", "x = mj.jit(lambda v: v - 0.1 * mnp.tanh(v))(x)")),
    # ex06_disable_jit: softmax(x) = softmax(x - c) with c the max of the scaled values;
    # jit stays on
    Wrong("ex06_disable_jit", "the mean subtracted, not the max",
          "scores far apart on both sides (the mean is 0)",
          _pp(_SOFTMAX, "mnp.exp(scaled - mnp.mean(scaled))")),
    Wrong("ex06_disable_jit", "the min subtracted", "large values",
          _pp(_SOFTMAX, "mnp.exp(scaled - mnp.min(scaled))")),
    Wrong("ex06_disable_jit", "the max of x subtracted, not of x / temperature",
          "a low temperature on large scores: the max of the scaled values",
          _pp(_SOFTMAX, "mnp.exp(scaled - mnp.max(x))")),
    Wrong("ex06_disable_jit", "the exponent clipped", "large values",
          _pp(_SOFTMAX, "mnp.exp(mnp.minimum(scaled, 700.0))")),
    Wrong("ex06_disable_jit", "jit switched off for good, not in a with block", "small values",
          _pp("with mj.disable_jit():\n    softmax(", "mj.config.update('disable_jit', True)\n"
              "if True:\n    softmax(")),
    Wrong("ex06_disable_jit", "stable_softmax not jitted", "small values",
          _pp("@mj.jit\ndef stable_softmax", "def stable_softmax")),
    # ex07_dce: liveness backwards, effects through has_effects, sub-jaxprs cleaned too,
    # invars kept
    Wrong("ex07_dce", "sub-jaxprs never entered", "dead code inside a fori_loop body",
          _pp("        eqn = map_subjaxprs(eqn, dce_jaxpr)\n", "")),
    Wrong("ex07_dce", "effects asked of the primitive, not has_effects(eqn)",
          "an unread cond whose branch prints stays",
          _pp("if not has_effects(eqn) and", "if not eqn.primitive.effectful and")),
    Wrong("ex07_dce", "effects ignored", "a debug.print stays",
          _pp("if not has_effects(eqn) and", "if")),
    Wrong("ex07_dce", "unread invars dropped", "dead code inside a fori_loop body",
          _pp("mj.Jaxpr(constvars, jaxpr.invars,",
              "mj.Jaxpr(constvars, tuple(v for v in jaxpr.invars if id(v) in live),")),
    Wrong("ex07_dce", "liveness walked forwards", "program sin_cos",
          (("for eqn in reversed(jaxpr.eqns):", "for eqn in jaxpr.eqns:"),
           ("tuple(reversed(kept))", "tuple(kept)"))),
    Wrong("ex07_dce", "kept equations in reverse order", "program sin_cos",
          _pp("tuple(reversed(kept))", "tuple(kept)")),
    Wrong("ex07_dce", "a kept equation's inputs not made live", "program sin_cos",
          _pp("        live.update(id(a) for a in eqn.invars if isinstance(a, mj.Var))\n", "")),
    # ex08_fusion_groups: rules 2-4
    Wrong("ex08_fusion_groups", "rule 2 without the shape",
          "a group's value broadcast to a larger shape starts a new group",
          _pp('if g["open"] and not g["reduction"] and g["shape"] == shape]',
              'if g["open"] and not g["reduction"]]')),
    Wrong("ex08_fusion_groups", "groups that feed one equation not merged", "program sin_cos",
          _pp("                for g in joinable[1:]:\n                    merge(target, g)\n",
              "")),
    Wrong("ex08_fusion_groups", "members join after a reduction", "program softmax",
          (("            if target[\"reduction\"]:\n                target[\"open\"] = False\n",
            ""),
           ('if g["open"] and not g["reduction"] and g["shape"] == shape]',
            'if g["open"] and g["shape"] == shape]'))),
    Wrong("ex08_fusion_groups", "groups never close (no rule 4)",
          "a debug.print among elementwise work",
          _pp("        for g in feeding:  # rule 4\n            if g is not target:\n"
              "                g[\"open\"] = False\n", "")),
    Wrong("ex08_fusion_groups", "reductions never join (no rule 3)", "program softmax",
          _pp("                target = g\n                target[\"reduction\"] = True\n",
              "                pass\n")),
    # ex09_softplus_rule: overflow for large x, log(1 + tiny) for very negative x
    _softplus("np.log(1 + np.exp(x)) (overflows, float64)", _F64_SOFTPLUS,
              'f"np.log(1.0 + np.exp({x}))"'),
    _softplus("np.log(1 + np.exp(x)) (overflows, float32)", _F32_SOFTPLUS,
              'f"np.log(1.0 + np.exp({x}))"'),
    _softplus("np.log1p(np.exp(x)) (overflows)", _F64_SOFTPLUS, 'f"np.log1p(np.exp({x}))"'),
    _softplus("max(x, 0) + log(1 + exp(-|x|)) (tiny results round to 0)", _TINY_SOFTPLUS,
              'f"(max({x}, 0.0) + np.log(1.0 + np.exp(-abs({x}))))"'),
    # ex09_loop_nest: operands line up with the last loops, size 1 reads 0, loops outermost
    # first, none for rank 0
    Wrong("ex09_loop_nest", "operands aligned on the first loops", _NEST,
          _pp("offset = len(shape) - len(s)", "offset = 0")),
    Wrong("ex09_loop_nest", "a dimension of size 1 read at the loop index", _NEST,
          _pp('"0" if d == 1 else idx[offset + k]', "idx[offset + k]")),
    Wrong("ex09_loop_nest", "loops innermost first", _NEST,
          _pp('for i, d in zip(idx, shape)]', "for i, d in zip(idx, shape)][::-1]")),
    Wrong("ex09_loop_nest", "a for line for a rank-0 loop", _SWITCH_IN + "loop_nest",
          _pp('for i, d in zip(idx, shape)]',
              'for i, d in zip(idx, shape)] or ["for i0 in range(1):"]')),
    # ex07_fold: chains, sub-jaxprs, outputs read through the folded values, the program's
    # own arithmetic at the literals' dtype, only the five primitives (a debug.print stays)
    Wrong("ex07_fold", "sub-jaxprs never entered", "inside a fori_loop body",
          _pp("        eqn = map_subjaxprs(eqn, my_fold)\n", "")),
    Wrong("ex07_fold", "inputs not read through the folded values (no chains)",
          "a chain: exp(add(1.0, 2.0)) and neg(3.0)",
          _pp("tuple(read(a) for a in eqn.invars)", "eqn.invars")),
    Wrong("ex07_fold", "the jaxpr's outputs not read through the folded values",
          _SWITCH_IN + "fold",
          _pp("tuple(read(a) for a in jaxpr.outvars)", "jaxpr.outvars")),
    Wrong("ex07_fold", "Python's arithmetic (never wraps, math.exp raises)", _SWITCH_IN + "fold",
          _pp("            values = [np.asarray(a.val, dtype=a.aval.dtype) for a in eqn.invars]"
              "\n            with np.errstate(all=\"ignore\"):  # exp(1000.0) is inf, as when "
              "the program runs\n                (value,) = impl_rules[eqn.primitive](*values, "
              "**eqn.params)\n",
              "            import math, operator\n            value = np.asarray({P.add_p: "
              "operator.add, P.sub_p: operator.sub, P.mul_p: operator.mul, P.neg_p: "
              "operator.neg, P.exp_p: math.exp}[eqn.primitive](*[a.val for a in eqn.invars]))"
              "\n")),
    Wrong("ex07_fold", "every primitive with literal inputs folded, debug.print too",
          "a debug.print of a folded value still prints it",
          _pp("if eqn.primitive in FOLDABLE and all(", "if all(")),
    # ex07_rule: the same variable, integers (signed or unsigned) only, a broadcast for arrays
    Wrong("ex07_rule", "fires for floats", "float: x - x stays (inf - inf is NaN)",
          _pp(' or out.aval.dtype.kind not in "iu"', "")),
    Wrong("ex07_rule", "signed integers only", _SWITCH_IN + "sub_self",
          _pp('out.aval.dtype.kind not in "iu"', 'out.aval.dtype.kind != "i"')),
    Wrong("ex07_rule", "fires for two variables of one type", "x - y stays",
          _pp("x is not y", "x.aval != y.aval")),
    Wrong("ex07_rule", "a literal for an array", "integer array: x - x",
          _pp("    if out.aval.shape == ():\n        return mj.Lit(0, out.aval)\n",
              "    return mj.Lit(0, out.aval)\n")),
    Wrong("ex07_rule", "a scalar literal for an array", "integer array: x - x",
          _pp("    if out.aval.shape == ():\n        return mj.Lit(0, out.aval)\n",
              "    return mj.Lit(0, out.aval.update(shape=()))\n")),
    # ex07_cse: literals by bits and dtype, inputs renamed first (chains), commutative inputs
    # in any order, params in the key, never an equation with effects, every output
    # redirected, each scope on its own
    Wrong("ex07_cse", "literals by identity", _SWITCH_IN + "cse",
          _pp("return (\"lit\", np.asarray(atom.val, atom.aval.dtype).tobytes(), "
              "atom.aval.dtype)", "return (\"lit\", id(atom))")),
    Wrong("ex07_cse", "literals by value (0.0 == -0.0)", _SWITCH_IN + "cse",
          _pp("return (\"lit\", np.asarray(atom.val, atom.aval.dtype).tobytes(), "
              "atom.aval.dtype)", "return (\"lit\", atom.val, atom.aval.dtype)")),
    Wrong("ex07_cse", "inputs keyed as they were, not as renamed (no chains)",
          "softmax as often written: exp(z) three times, chains of duplicates",
          (("    for eqn in jaxpr.eqns:\n", "    for eqn in jaxpr.eqns:\n        original = eqn\n"),
           ("inputs = [key_of(a) for a in eqn.invars]",
            "inputs = [key_of(a) for a in original.invars]"))),
    Wrong("ex07_cse", "commutative inputs in their order", "commutative: sin(x) * y and y * sin(x)",
          _pp("            if eqn.primitive in COMMUTATIVE:\n                inputs.sort(key=repr)"
              "\n", "")),
    Wrong("ex07_cse", "params left out of the key",
          "same input, different params: sums over different axes",
          _pp("tuple(sorted(eqn.params.items()))", "()")),
    # (two conds merge only when their branches are the same objects: sub-jaxprs left as
    # they are, or returned as they came when nothing changed)
    Wrong("ex07_cse", "effects asked of the primitive, not has_effects(eqn)",
          "a duplicated cond whose branch prints: both stay",
          (("        eqn = map_subjaxprs(eqn, my_cse)\n", ""),
           ("        if not has_effects(eqn):", "        if not eqn.primitive.effectful:"))),
    Wrong("ex07_cse", "equations with effects merged",
          "a debug.print equation duplicated: both stay",
          _pp("        if not has_effects(eqn):", "        if True:")),
    Wrong("ex07_cse", "only the first output redirected",
          "a duplicated cond with two outputs, the copy's outputs used",
          (("        eqn = map_subjaxprs(eqn, my_cse)\n", ""),
           ("zip(eqn.outvars, seen[key])", "zip(eqn.outvars[:1], seen[key])"))),
    Wrong("ex07_cse", "one table shared with the sub-jaxprs",
          "exp(1.0) outside and inside a loop body: each scope on its own",
          (("def my_cse(jaxpr):\n", "def my_cse(jaxpr, seen=None, replaced=None):\n"),
           ("    replaced = {}  # id(Var) -> the Var computed earlier with the same value\n"
            "    seen = {}  # key -> the outvars of the first equation with that key\n",
            "    replaced = {} if replaced is None else replaced\n"
            "    seen = {} if seen is None else seen\n"),
           ("map_subjaxprs(eqn, my_cse)", "map_subjaxprs(eqn, lambda j: my_cse(j, seen, "
            "replaced))"))),
    Wrong("ex07_cse", "sub-jaxprs never cleaned", "a duplicate inside a fori_loop body",
          _pp("        eqn = map_subjaxprs(eqn, my_cse)\n", "")),
    # ex08_may_fuse: elementwise or broadcast_in_dim, no effects, an array output (rank, not
    # size), no output at all
    Wrong("ex08_may_fuse", "broadcast_in_dim left out", "softmax (reductions, broadcasts)",
          _pp(" and eqn.primitive is not P.broadcast_in_dim_p", "")),
    Wrong("ex08_may_fuse", "reductions may fuse too", "softmax (reductions, broadcasts)",
          _pp("eqn.primitive not in ELEMENTWISE and", "eqn.primitive not in ELEMENTWISE and "
              "eqn.primitive.name not in ('reduce_sum', 'reduce_max') and")),
    Wrong("ex08_may_fuse", "effects never asked",
          "an effectful elementwise primitive (made up for the test)",
          _pp("    return not has_effects(eqn)", "    return True")),
    Wrong("ex08_may_fuse", "one element taken for a scalar (size, not rank)",
          _SWITCH_IN + "may_fuse",
          _pp("eqn.outvars[0].aval.shape == ()", "eqn.outvars[0].aval.size == 1")),
    Wrong("ex08_may_fuse", "the output read before asking whether there is one",
          "a debug.print among elementwise work",
          _pp("if not eqn.outvars or eqn.outvars[0].aval.shape == ()",
              "if eqn.outvars[0].aval.shape == ()")),
    Wrong("ex08_may_fuse", "an and/or expression that gives no bool",
          "a debug.print among elementwise work",
          _pp("    if not eqn.outvars or eqn.outvars[0].aval.shape == ():\n        return False\n",
              "    if not eqn.outvars:\n        return eqn.outvars\n"
              "    if eqn.outvars[0].aval.shape == ():\n        return False\n")),
]


def _solution_cell(exercise: str) -> str:
    notebook = nbformat.read(SOLUTIONS / NOTEBOOKS[exercise], as_version=4)
    (source,) = [c.source for c in notebook.cells if c.cell_type == "code"
                 and c.source.startswith(f"# EXERCISE {exercise}")]
    return source


def _cell(wrong: Wrong) -> str:
    if wrong.cell is not None:
        return wrong.cell
    source = _solution_cell(wrong.exercise)
    for old, new in wrong.edits:
        assert source.count(old) == 1, f"{wrong.what}: {old!r} is not in the cell once"
        source = source.replace(old, new)
    return source


def _public_rows(exercise: str, cell: str) -> dict:
    """{case name: passed} for the public cases of `exercise` run on `cell`."""
    ns = solution_namespace(NOTEBOOKS[exercise])
    saved = dict(config._values)
    try:
        prelude = "".join(_solution_cell(e) + "\n\n" for e in PRELUDE_EXERCISES.get(exercise, ()))
        exec(compile(PRELUDES.get(exercise, "") + prelude + cell, f"<{exercise}>", "exec"), ns)
        report = run_public_cases(default_exercises()[exercise], ns)
    finally:
        build.reset()
        config._values.clear()
        config._values.update(saved)
        config._refresh()
    return {row.name: row.passed for row in report.rows}


_solution_rows: dict[str, dict] = {}


def _solution(exercise: str) -> dict:
    if exercise not in _solution_rows:
        _solution_rows[exercise] = _public_rows(exercise, _solution_cell(exercise))
    return _solution_rows[exercise]


@pytest.mark.parametrize("exercise", sorted({w.exercise for w in WRONG}))
def test_the_solution_passes_every_public_case(exercise):
    rows = _solution(exercise)
    assert all(rows.values()), [name for name, ok in rows.items() if not ok]


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.exercise}: {w.what}")
def test_a_named_pitfall_fails_a_public_case(wrong):
    assert wrong.caught_by in _solution(wrong.exercise), f"no public case {wrong.caught_by!r}"
    rows = _public_rows(wrong.exercise, _cell(wrong))
    assert rows[wrong.caught_by] is False, (
        f"{wrong.what} passes {wrong.caught_by!r}; failed: "
        f"{[name for name, ok in rows.items() if not ok]}")
