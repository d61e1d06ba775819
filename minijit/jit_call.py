"""`jit_p`: a call of a jitted function, staged as one equation (chapters 05 and 07).

A jitted function called while another function is being traced does not run, and is not
pasted into the caller equation by equation either: it is traced into its own sub-Jaxpr, and
the caller's program gets one equation, printed as JAX prints it,

    b:f64[3] = jit[
      name=inner
      jaxpr={ lambda ; a:f64[3]. let
          c:f64[3] = sin a
          b:f64[3] = mul c 2.0:f64[]
        in (b,) }
    ] a

`jit.JitFunction` does the tracing (its arguments split as at a top-level call); this module
holds the primitive and its rules. The optimizer's first pass, `passes.inline_jit`, replaces
every such equation by the body it holds, so later passes and code generation never see one.

Invariants:
- params are `name` (the function's name, for people) and `jaxpr`, a Jaxpr without
  constvars: what the body captured from outside (outer tracers, arrays) comes first among
  the operands (closure conversion, as for `cond`), then the arguments' leaves;
- the equation's outputs have the body's output types (weak types included).
"""

from __future__ import annotations

from collections.abc import Sequence

from minijit.core import Primitive, ShapedArray, abstract_eval_rules, bind, impl_rules
from minijit.interpret import eval_jaxpr
from minijit.ir import ClosedJaxpr, Eqn, Jaxpr, Shown, VarNames, pp_eqn_default, pp_eqn_rules

jit_p = Primitive("jit", multiple_results=True)


def call_jitted(closed: ClosedJaxpr, leaves: Sequence, name: str) -> list:
    """Bind `jit_p` for a traced call: `closed`'s consts become the leading operands."""
    jaxpr = closed.jaxpr
    body = Jaxpr((), jaxpr.constvars + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    return bind(jit_p, *closed.consts, *leaves, jaxpr=body, name=name)


def _jit_abstract_eval(*avals: ShapedArray, jaxpr: Jaxpr, name: str) -> list[ShapedArray]:
    if [a.strip_weak_type() for a in avals] != [a.strip_weak_type() for a in jaxpr.in_avals]:
        raise TypeError(f"jit of {name}: operands do not match the body's inputs")
    return jaxpr.out_avals


abstract_eval_rules[jit_p] = _jit_abstract_eval
impl_rules[jit_p] = lambda *args, jaxpr, name: eval_jaxpr(jaxpr, (), *args)


def _jit_pp_rule(eqn: Eqn, names: VarNames):
    # As JAX: the body's inputs and outputs take the names of the caller's atoms, so the body
    # reads as the call site does; `name` comes first, to scan a program by function name.
    body = eqn.params["jaxpr"]
    names.suggest(body.invars, eqn.invars)
    names.suggest(body.outvars, eqn.outvars)
    rest = sorted(k for k in eqn.params if k != "name")
    params = {**eqn.params, "name": Shown(eqn.params["name"])}
    return pp_eqn_default(eqn, names, params, param_order=["name", *rest])


pp_eqn_rules[jit_p] = _jit_pp_rule
