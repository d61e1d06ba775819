"""Chapter 07 (cleanup passes): four pieces of minijit's optimizer, graded inside minijit's
own pipeline. Each is a build-track piece (``minijit.build``): the probe switches the
learner's function in, so minijit runs it where it runs its own, with the piece's check (a
wrong result is a ``PieceError`` naming the piece, a function that hands its work to
minijit's own fails) and ``run_passes``'s typecheck; an exception of the learner's code is
reported as itself (``learners_errors``), so the hints for it apply.

Every probe traces a hidden program (its source is the case's text, run with ``exec``),
runs it through the pass, and returns the values the optimized program computes with
``mj.eval_jaxpr``, the text its ``debug.print`` calls printed, and the property the pass
promises, measured on the result:

- ``ex07_fold``: ``my_fold(jaxpr)``, the piece ``fold`` (the literal half of
  ``fold_constants``): folds ``add/sub/mul/neg/exp`` equations whose inputs are all
  literals, in sub-Jaxprs too. Graded with the piece alone, then ``dce``; property: no such
  equation left anywhere.
- ``ex07_rule``: ``sub_self(eqn)``, the piece ``sub_self``, the rule ``x - x -> 0`` for
  integers that ``simplify`` asks for every ``sub``. ``simplify`` runs with minijit's own
  rules only (not ones a notebook registered, restored afterwards); property: how many
  ``sub x x`` are left (none for integers, all of them for floats, where ``inf - inf`` is
  NaN).
- ``ex07_cse``: ``my_cse(jaxpr)``, the piece ``cse``. Graded with the pass ``cse``, some
  programs with an equation duplicated by hand (a ``cond`` with two outputs, a ``cond`` whose
  branch prints, a ``debug.print``); property: at every level, no two remaining equations
  without effects share minijit's ``eqn_key``.
- ``ex07_dce``: ``dce_jaxpr(jaxpr) -> Jaxpr``, the piece ``dce``. Each case is a program
  of ``minijit.grading.programs`` (traced with a dead copy of itself, so that every one has
  dead code) or a program with effects and dead code in sub-Jaxprs, optimized by the
  pipeline with the learner's piece switched in; the values and printed text must be
  minijit's, and the property is measured: no dead equation left at any level, every
  equation with effects kept.

The last public case of each runs the small example ``build.use`` runs before it switches
the piece in (``switch_in_case``). No probe runs the default pipeline or ``mj.jit``: a
notebook's broken rule left in ``RULES`` would otherwise fail exercises that have nothing to
do with it. For the same reason every probe runs minijit's own optimizer pieces but for the
one it grades (``chapter_pieces``), whatever the notebook switched in.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.build_pieces import switch_in_case
from minijit.grading.cases import (
    Case,
    Exercise,
    Hint,
    program_cases,
    program_hidden,
    source_case,
)
from minijit.grading.probing import get, printed

# ------------------------------------------------------------------------ ex07_fold


def probe_fold(ns, source, args):
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import build, lax
    from minijit import primitives as P
    from minijit.grading.optimizer_probes import chapter_pieces, learners_errors
    from minijit.ir import Lit, pp_eqn_alone, subjaxprs
    from minijit.passes import dce, run_passes
    from minijit.passes.rewrite import jaxpr_pass

    # The piece alone, as fold_constants runs it before its own folding (which would fold
    # whatever the piece left, and hide it)
    my_fold = jaxpr_pass(lambda jaxpr, const_values: build.call("fold", jaxpr),
                         name="my_fold")
    scope = {"np": np, "mj": mj, "mnp": mnp, "lax": lax}
    exec(source, scope)  # a program from the case list (trusted text, not the learner's)
    arrays = [np.asarray(value, dtype=dtype) for value, dtype in args]
    closed = mj.make_jaxpr(scope["f"])(*arrays)
    with (np.errstate(all="ignore"), chapter_pieces(fold=get(ns, "my_fold")),
          learners_errors()):
        folded = run_passes(closed, [my_fold, dce])
        values, text = printed(mj.eval_jaxpr, folded.jaxpr, folded.consts, *arrays)
    left = []

    def walk(jaxpr):
        for e in jaxpr.eqns:
            if e.primitive in (P.add_p, P.sub_p, P.mul_p, P.neg_p, P.exp_p) and all(
                    isinstance(a, Lit) for a in e.invars):
                left.append(pp_eqn_alone(e))
            for sub in subjaxprs(e):
                walk(sub)

    walk(folded.jaxpr)
    return {"values": [np.asarray(v) for v in values], "printed": text,
            "left_to_fold": left}


def _reference_fold():
    from dataclasses import replace

    import minijit as mj
    from minijit import primitives as P
    from minijit.core import impl_rules
    from minijit.passes.rewrite import map_subjaxprs

    foldable = {P.add_p, P.sub_p, P.mul_p, P.neg_p, P.exp_p}

    def my_fold(jaxpr):
        known = {}  # id(Var) -> the Lit that replaces it

        def read(a):
            return known.get(id(a), a) if isinstance(a, mj.Var) else a

        eqns = []
        for eqn in jaxpr.eqns:
            eqn = replace(eqn, invars=tuple(read(a) for a in eqn.invars))
            eqn = map_subjaxprs(eqn, my_fold)
            if eqn.primitive in foldable and all(isinstance(a, mj.Lit) for a in eqn.invars):
                values = [np.asarray(a.val, dtype=a.aval.dtype) for a in eqn.invars]
                with np.errstate(all="ignore"):
                    (value,) = impl_rules[eqn.primitive](*values, **eqn.params)
                (out,) = eqn.outvars
                known[id(out)] = mj.Lit(np.asarray(value, dtype=out.aval.dtype).item(), out.aval)
            else:
                eqns.append(eqn)
        return mj.Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns),
                        tuple(read(a) for a in jaxpr.outvars))

    return {"my_fold": my_fold}


_F3 = ([0.5, -1.25, 2.0], "float64")
_EXACT_FOLD = Hint(
    pitfall=("Python numbers are not the program's numbers: Python ints never overflow, while "
             "an int32 or a uint8 wraps around, and math.exp raises where NumPy's exp gives "
             "inf. Fold with the arithmetic the program itself runs, at the literals' dtype."),
    code=("Compute with impl_rules[eqn.primitive] on np.asarray(lit.val, dtype=lit.aval.dtype) "
          "for each input, under np.errstate(all=\"ignore\"), and write the result as "
          "mj.Lit(value.item(), out.aval)."))

_FOLD_PUBLIC = (
    source_case("a chain: exp(add(1.0, 2.0)) and neg(3.0)",
             "def f(x):\n    return x * mnp.exp(mnp.add(1.0, 2.0)) - mnp.negative(3.0)", _F3),
    source_case("inside a fori_loop body",
             "def f(x):\n    return lax.fori_loop(0, 3, lambda i, y: y * mnp.negative(0.5)"
             " + mnp.exp(mnp.multiply(2.0, 0.25)), x)", _F3),
    source_case("x + 1.0 stays: one input is not a literal",
             "def f(x):\n    return mnp.sin(x + 1.0) * x", _F3),
    source_case("a debug.print of a folded value still prints it",
             "def f(x):\n    mj.debug.print('c = {}', mnp.add(1.0, 2.0))\n"
             "    return x * mnp.multiply(2.0, 3.0)", _F3,
             hint=("Only add, sub, mul, neg and exp fold. Every other equation stays, and a "
                   "debug.print above all: it has effects, so folded away it would print once "
                   "while optimizing instead of every time the program runs. It still reads "
                   "the literals that replaced folded values.")),
)

_FOLD_HIDDEN = (
    source_case("an output that is a constant",
             "def f(x):\n    return x * 2.0, mnp.exp(0.0) + mnp.subtract(1.0, 3.0)", _F3),
    source_case("int32 overflow wraps around, as in NumPy",
             "def f(x):\n    return x + mnp.multiply(np.int32(2**20), np.int32(2**20)) "
             "+ mnp.multiply(np.int32(70000), np.int32(70000))",
             ([1, 2, 3], "int32"),
             hint=_EXACT_FOLD),
    source_case("uint8: 3 - 5 wraps around to 254",
             "def f(x):\n    return x + mnp.subtract(np.uint8(3), np.uint8(5))",
             ([1, 2], "uint8"),
             hint=_EXACT_FOLD),
    source_case("exp of a large constant is inf, not an error",
             "def f(x):\n    return x + mnp.exp(1000.0) * 0.5 + mnp.exp(-1000.0)", _F3,
             hint=_EXACT_FOLD),
    source_case("float32",
             "def f(x):\n    return x * mnp.exp(np.float32(0.5)) + mnp.negative(np.float32(2.5))",
             ([1.0, 2.0], "float32")),
    source_case("in both branches of a cond",
             "def f(p, x):\n    return lax.cond(p, lambda x: x * mnp.exp(2.0), "
             "lambda x: x - mnp.negative(mnp.add(1.0, 1.0)), x)",
             (True, "bool"), _F3),
    source_case("a cond inside a fori_loop",
             "def f(x):\n    return lax.fori_loop(0, 2, lambda i, y: lax.cond(i > 0, "
             "lambda y: y * mnp.add(0.5, 0.25), lambda y: y + mnp.exp(mnp.negative(1.0)), y), x)",
             _F3),
    source_case("a loop body whose output is a constant",
             "def f(x):\n    return lax.fori_loop(0, 3, lambda i, y: mnp.exp(1.0) + 0.0 * y, x)",
             ([2.0], "float64")),
    source_case("nothing to fold",
             "def f(x, y):\n    return mnp.sin(x) * y - mnp.exp(x)", _F3, _F3),
    source_case("integers, scalar input",
             "def f(i):\n    return i * mnp.add(2, 3) - mnp.negative(mnp.multiply(4, 5))",
             (7, "int64")),
)

# ------------------------------------------------------------------------ ex07_cse


def probe_cse(ns, source, args, duplicate=None):
    from dataclasses import replace

    import minijit as mj
    import minijit.numpy as mnp
    from minijit import lax
    from minijit.core import abstract_eval_rules
    from minijit.grading.optimizer_probes import chapter_pieces, learners_errors
    from minijit.ir import ClosedJaxpr, Jaxpr, Var, pp_eqn_alone, subjaxprs
    from minijit.passes import cse, run_passes
    from minijit.passes.cse import eqn_key
    from minijit.passes.rewrite import has_effects

    scope = {"np": np, "mj": mj, "mnp": mnp, "lax": lax}
    exec(source, scope)  # a program from the case list (trusted text, not the learner's)
    arrays = [np.asarray(value, dtype=dtype) for value, dtype in args]
    closed = mj.make_jaxpr(scope["f"])(*arrays)
    if duplicate is not None:
        # A copy of the first `duplicate` equation right after it, with fresh outputs that
        # every later reader uses instead: merging it must point them back at the original.
        j = closed.jaxpr
        # the case names it; every primitive has an abstract-eval rule, so the table has it
        wanted = next(p for p in abstract_eval_rules if p.name == duplicate)
        k = next(i for i, e in enumerate(j.eqns) if e.primitive is wanted)
        original = j.eqns[k]
        copy = replace(original, outvars=tuple(Var(v.aval) for v in original.outvars))
        swap = {id(a): b for a, b in zip(original.outvars, copy.outvars)}

        def read(a):
            return swap.get(id(a), a) if isinstance(a, Var) else a

        later = tuple(replace(e, invars=tuple(read(a) for a in e.invars))
                      for e in j.eqns[k + 1:])
        closed = ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.eqns[:k + 1] + (copy,) + later,
                                   tuple(read(a) for a in j.outvars)), closed.consts)
    with np.errstate(all="ignore"), chapter_pieces(cse=get(ns, "my_cse")), learners_errors():
        out = run_passes(closed, [cse])  # the pass, running the piece cse: yours
        values, text = printed(mj.eval_jaxpr, out.jaxpr, out.consts, *arrays)
    duplicates = []

    def walk(jaxpr):
        seen = set()
        for e in jaxpr.eqns:
            if not has_effects(e):
                key = eqn_key(e)
                if key in seen:
                    duplicates.append(pp_eqn_alone(e).split("\n")[0])
                seen.add(key)
            for sub in subjaxprs(e):
                walk(sub)

    walk(out.jaxpr)
    return {"values": [np.asarray(v) for v in values], "printed": text,
            "duplicates_left": duplicates}


def _reference_cse():
    from dataclasses import replace

    import minijit as mj
    from minijit.core import COMMUTATIVE
    from minijit.passes.rewrite import has_effects, map_subjaxprs

    def atom_key(a):
        if isinstance(a, mj.Lit):  # by bits and dtype: 0.0 == -0.0 in Python
            return ("lit", np.asarray(a.val, a.aval.dtype).tobytes(), a.aval.dtype)
        return ("var", id(a))

    def my_cse(jaxpr):
        replaced = {}  # id(Var) -> the Var computed earlier with the same value
        seen = {}  # key -> outvars of the first equation with that key

        def read(a):
            return replaced.get(id(a), a) if isinstance(a, mj.Var) else a

        eqns = []
        for eqn in jaxpr.eqns:
            eqn = replace(eqn, invars=tuple(read(a) for a in eqn.invars))
            eqn = map_subjaxprs(eqn, my_cse)
            inputs = [atom_key(a) for a in eqn.invars]
            if eqn.primitive in COMMUTATIVE:
                inputs.sort(key=repr)
            key = (eqn.primitive, tuple(inputs), tuple(sorted(eqn.params.items())))
            if not has_effects(eqn):
                if key in seen:
                    replaced.update((id(new), old) for new, old in zip(eqn.outvars, seen[key]))
                    continue
                seen[key] = eqn.outvars
            eqns.append(eqn)
        return mj.Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns),
                        tuple(read(a) for a in jaxpr.outvars))

    return {"my_cse": my_cse}


def _csesource_case(label: str, source: str, *args, duplicate: str | None = None,
                 hint: str | Hint | None = None) -> Case:
    return Case(label, (source, [list(a) for a in args], duplicate), hint=hint)


_SOFTMAX = ("def f(x):\n    z = x - mnp.max(x)\n"
            "    return mnp.exp(z) / mnp.sum(mnp.exp(z)) + mnp.exp(z) * mnp.sum(mnp.exp(z))")
_EFFECTS_HINT = Hint(
    pitfall=("Two equations with effects never compute \"the same thing\": two debug.prints "
             "must print twice, and so must two conds whose branch prints, although cond "
             "itself is not an effectful primitive. Compare the printed text of the failed "
             "case."),
    code=("Merge only when not has_effects(eqn): it looks inside sub-jaxprs too, which "
          "eqn.primitive.effectful does not."))

_CSE_PUBLIC = (
    _csesource_case("softmax as often written: exp(z) three times, chains of duplicates",
                 _SOFTMAX, _F3),
    _csesource_case("commutative: sin(x) * y and y * sin(x)",
                 "def f(x, y):\n    return mnp.sin(x) * y + y * mnp.sin(x)", _F3, _F3),
    _csesource_case("a duplicate inside a fori_loop body",
                 "def f(x):\n    return lax.fori_loop(0, 3, lambda i, c: mnp.sin(c) * 0.5 "
                 "+ mnp.sin(c), x)", _F3,
                 hint=Hint(
                     pitfall=("A loop body is a jaxpr of its own, with duplicates of its own: "
                              "the pass must clean it too (the failed case names the "
                              "equation left in it)."),
                     code=("Give each equation map_subjaxprs(eqn, my_cse): it calls your pass "
                           "on each branch and loop body."))),
    _csesource_case("two debug.prints of the same value print twice",
                 "def f(x):\n    mj.debug.print('x = {}', x)\n    mj.debug.print('x = {}', x)\n"
                 "    return x * 2.0", _F3, hint=_EFFECTS_HINT),
    _csesource_case("a debug.print equation duplicated: both stay",
                 "def f(x):\n    mj.debug.print('x = {}', x)\n    return mnp.sin(x)",
                 _F3, duplicate="debug_callback", hint=_EFFECTS_HINT),
    _csesource_case("same input, different params: sums over different axes",
                 "def f(x):\n    return mnp.sum(x, axis=0) + mnp.sum(x, axis=1) "
                 "+ mnp.sum(x, axis=0)",
                 ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]], "float64"),
                 hint=Hint(
                     pitfall=("The params are part of what an equation computes: a sum over "
                              "axis 0 and a sum over axis 1 of the same input are different "
                              "values, so only equations with equal params may merge."),
                     code=("Put the params in the key, as tuple(sorted(eqn.params.items())), "
                           "next to the primitive and the input keys."))),
    _csesource_case("a duplicated cond with two outputs, the copy's outputs used",
                 "def f(p, x):\n    a, b = lax.cond(p, lambda x: (x * 2.0, x + 1.0), "
                 "lambda x: (x - 1.0, x), x)\n    return a * b",
                 (True, "bool"), _F3, duplicate="cond",
                 hint=Hint(
                     pitfall=("An equation may have several outputs: the readers of every one "
                              "of them must be pointed at the first equation's outputs, not "
                              "only the readers of the first."),
                     code="zip(eqn.outvars, the first equation's outvars) into the renaming.")),
    _csesource_case("a duplicated cond whose branch prints: both stay",
                 "def f(p, x):\n    def loud(x):\n        mj.debug.print('branch {}', x)\n"
                 "        return x * 2.0\n    return lax.cond(p, loud, lambda x: x, x)",
                 (True, "bool"), _F3, duplicate="cond", hint=_EFFECTS_HINT),
    _csesource_case("exp(1.0) outside and inside a loop body: each scope on its own",
                 "def f(x):\n    k = mnp.exp(1.0)\n    return lax.fori_loop(0, 2, lambda i, y: "
                 "y * mnp.exp(1.0) + mnp.exp(1.0), x) * k", _F3,
                 hint=Hint(
                     pitfall=("Each jaxpr is cleaned with its own table: a value computed "
                              "outside a loop body is not a variable of the body, so the body "
                              "cannot read it."),
                     code=("Let my_cse start a fresh table on every call, and call it on sub-"
                           "jaxprs through map_subjaxprs, never with the outer table."))),
)

_CSE_HIDDEN = (
    _csesource_case("x * 2.0 twice: two literal objects with the same value",
                 "def f(x):\n    return (x * 2.0) * (x * 2.0) + (2.0 * x)", _F3,
                 hint=Hint(
                     pitfall=("Literals are new objects every time they are written: two equal "
                              "literals are different objects, so a literal is compared by "
                              "its value, never by identity."),
                     code=("Key a literal by np.asarray(lit.val, lit.aval.dtype).tobytes() "
                           "with its dtype, a Var by id(var)."))),
    _csesource_case("x * 0.0 and x * -0.0 differ (1 / them: inf and -inf)",
                 "def f(x):\n    return 1.0 / (x * 0.0) - 1.0 / (x * -0.0)",
                 ([0.5, 1.0, 2.0], "float64"),
                 hint=Hint(
                     pitfall=("0.0 == -0.0 in Python (with the same hash), but x * 0.0 and "
                              "x * -0.0 differ in sign: literals are the same only when their "
                              "bits and dtype are."),
                     code=("Key a literal by np.asarray(lit.val, lit.aval.dtype).tobytes() "
                           "with its dtype."))),
    _csesource_case("the same value returned twice",
                 "def f(x):\n    return mnp.sin(x), mnp.sin(x), mnp.cos(mnp.sin(x))", _F3),
    _csesource_case("integers, commutative add",
                 "def f(i, j):\n    return (i + j) * (j + i) - (i - j) * (j - i)",
                 (3, "int64"), (5, "int64")),
    _csesource_case("nothing to merge",
                 "def f(x):\n    return mnp.sin(x) + mnp.cos(x) * mnp.exp(x)", _F3),
    _csesource_case("duplicates in both branches of a cond",
                 "def f(p, x):\n    return lax.cond(p, lambda x: mnp.tanh(x) * mnp.tanh(x), "
                 "lambda x: mnp.exp(x) - mnp.exp(x) * 0.5, x)", (False, "bool"), _F3),
)

# ------------------------------------------------------------------------ ex07_rule


def probe_rule(ns, source, args):
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import lax
    from minijit import primitives as P
    from minijit.grading.optimizer_probes import chapter_pieces, learners_errors
    from minijit.ir import Var, subjaxprs
    from minijit.passes import run_passes, simplify
    from minijit.passes.simplify import RULES

    rule = get(ns, "sub_self")
    if not callable(rule):
        raise TypeError("sub_self must be a function eqn -> None | atom | list of equations")
    scope = {"np": np, "mj": mj, "mnp": mnp, "lax": lax}
    exec(source, scope)  # a program from the case list (trusted text, not the learner's)
    arrays = [np.asarray(value, dtype=dtype) for value, dtype in args]
    closed = mj.make_jaxpr(scope["f"])(*arrays)
    saved = {p: list(rules) for p, rules in RULES.items()}

    def own(r):  # a rule that minijit itself defines
        module = getattr(r, "__module__", None) or ""
        return module.startswith("minijit.") and not module.startswith("minijit.grading")

    try:
        # A copy of the table: minijit's own rules (not ones a notebook registered), one of
        # which asks the piece sub_self: this one.
        for p, rules in saved.items():
            RULES[p] = [r for r in rules if r is not rule and own(r)]
        with chapter_pieces(sub_self=rule), learners_errors():
            out = run_passes(closed, [simplify])
    finally:
        RULES.clear()
        RULES.update(saved)
    with np.errstate(all="ignore"):
        values = mj.eval_jaxpr(out.jaxpr, out.consts, *arrays)
    count = 0

    def walk(jaxpr):
        nonlocal count
        for e in jaxpr.eqns:
            x = e.invars[0] if e.invars else None
            if e.primitive is P.sub_p and isinstance(x, Var) and e.invars[1] is x:
                count += 1
            for sub in subjaxprs(e):
                walk(sub)

    walk(out.jaxpr)
    return {"values": [np.asarray(v) for v in values], "x_minus_x_left": count}


def _reference_sub_self(eqn):
    import minijit as mj
    from minijit import primitives as P

    x, y = eqn.invars
    (out,) = eqn.outvars
    if not isinstance(x, mj.Var) or x is not y or out.aval.dtype.kind not in "iu":
        return None
    if out.aval.shape == ():
        return mj.Lit(0, out.aval)
    zero = mj.Lit(0, out.aval.update(shape=()))
    return [mj.Eqn(P.broadcast_in_dim_p, (zero,), (out,),
                   {"shape": out.aval.shape, "broadcast_dimensions": ()}, eqn.source)]


# Strings: the arguments travel as Python literals, and inf and nan are not literals.
_NAN_INF = (["inf", "nan", "-1.5", "0.0"], "float64")
_FLOATS_HINT = Hint(
    pitfall=("The rule may fire only for integers, signed or unsigned: for floats x - x is not "
             "0 when x is inf or NaN, so the rule would change the results."),
    code="Return None unless out.aval.dtype.kind in 'iu'.")
_ARRAY_HINT = Hint(
    pitfall=("A literal is a scalar: for an array x, x - x is an array of zeros, and a rule "
             "must not change the output's type. An array output needs an equation that "
             "defines that same output variable, which later equations go on reading."),
    code=("Return a list with one broadcast_in_dim equation whose output is the equation's own "
          "and whose input is a scalar 0 (out.aval.update(shape=())); print mj.make_jaxpr of "
          "mnp.zeros to see its params."))

_RULE_PUBLIC = (
    source_case("integer scalar: i - i", "def f(i):\n    return i - i + 1", (7, "int64")),
    source_case("integer array: x - x", "def f(x):\n    return (x - x) * 3", ([1, -2, 3], "int64"),
             hint=_ARRAY_HINT),
    source_case("float: x - x stays (inf - inf is NaN)", "def f(x):\n    return x - x",
             _NAN_INF, hint=_FLOATS_HINT),
    source_case("x - y stays", "def f(x, y):\n    return x - y", ([1, 2], "int64"),
             ([5, 1], "int64"),
             hint=Hint(
                 pitfall=("x - y is not 0: the rule may fire only when both inputs are the "
                          "same variable, not two variables of equal type or value."),
                 code="Compare the inputs by identity: eqn.invars[0] is eqn.invars[1]."),
             ),
)

_RULE_HIDDEN = (
    source_case("float32: x - x stays", "def f(x):\n    return (x - x) * 2.0",
             (["inf", "1.0"], "float32"), hint=_FLOATS_HINT),
    source_case("float scalar stays", "def f(x):\n    return x - x", ("nan", "float64"),
             hint=_FLOATS_HINT),
    source_case("int32 matrix", "def f(x):\n    return mnp.sum(x - x, axis=0) + x[0]",
             ([[1, 2, 3], [4, 5, 6]], "int32"), hint=_ARRAY_HINT),
    source_case("uint8 (unsigned: also exact)", "def f(x):\n    return x - x + x",
             ([0, 200, 255], "uint8")),
    source_case("fires after other rules: (i * 1) - i and -(-i) - i",
             "def f(i):\n    return (i * 1 - i) + (-(-i) - i)", ([4, 5], "int64")),
    source_case("inside a fori_loop body", "def f(x):\n    return lax.fori_loop(0, 3, "
             "lambda k, c: c + (k - k) + (c - c), x)", ([1, 2, 3], "int64")),
    source_case("x - 0 and 0 - x are not x - x",
             "def f(x):\n    return (x - 0) + (0 - x) + (x - x)", ([3, 4], "int64")),
    source_case("mixed: integer fires, float stays",
             "def f(i, x):\n    return (i - i) * 2, x - x", (9, "int32"), _NAN_INF,
             hint=_FLOATS_HINT),
)

_PASS_ERROR_HINT = ("run_passes typechecks after your pass, and the program it returned does "
                    "not typecheck (the message names the equation): usually a variable "
                    "whose equation you removed is still read, by a later equation or by the "
                    "jaxpr's outputs, or a replacement has another type than the value it "
                    "replaces.")
_CLOSED_HINT = Hint(
    pitfall=("Your function receives a Jaxpr and must return a Jaxpr, not a ClosedJaxpr: the "
             "grader lifts it into a pass with jaxpr_pass, as minijit does for its own "
             "passes, and a sub-jaxpr (a loop body, a branch) is a Jaxpr too."),
    code=("Read jaxpr.constvars, jaxpr.invars, jaxpr.eqns and jaxpr.outvars directly (there is "
          "no .jaxpr or .consts), and return mj.Jaxpr(constvars, invars, eqns, outvars)."))

_PIECE_HINT = ("minijit ran your piece inside run_passes and found its result wrong; the "
               "message says what (an equation dropped, a group that may not fuse, ...).")

EXERCISES = [
    Exercise(
        id="ex07_fold", points=3, title="Constant folding for five primitives",
        chapter="07_cleanup_passes",
        section="2. `fold_constants`: do at compile time what does not depend on the inputs",
        hint=Hint(
            pitfall=("Folding must reach every constant: a value folded earlier makes its "
                     "readers foldable too (chains), a folded value is replaced wherever it "
                     "is read, the jaxpr's outputs included, and loop bodies and branches are "
                     "jaxprs of their own. The failed case lists what is left to fold: look "
                     "where it sits and what it reads."),
            code=("Keep known = {id(var): Lit}. For each eqn, rebuild it with its invars read "
                  "through known, then eqn = map_subjaxprs(eqn, my_fold); if it is in "
                  "FOLDABLE and every input is an mj.Lit, evaluate it with impl_rules on the "
                  "literals' values and record its output in known instead of keeping the "
                  "equation. Return mj.Jaxpr(constvars, invars, the kept eqns, the outvars "
                  "read through known).")),
        probe=probe_fold, reference=_reference_fold,
        public=(*_FOLD_PUBLIC, switch_in_case("ex07_fold")), hidden=_FOLD_HIDDEN,
        error_hints={
            "PieceError": Hint(_PIECE_HINT + " A fold only replaces equations by their "
                               "values: the invars, the outputs' types and every equation "
                               "with effects stay."),
            "PassError": _PASS_ERROR_HINT,
            "AttributeError": _CLOSED_HINT,
            "OverflowError": _EXACT_FOLD,
            "ValueError": Hint(
                pitfall=("An equation without exactly one output was folded: only add, sub, "
                         "mul, neg and exp fold. An equation with effects (a debug.print, "
                         "which has no outputs) must stay in the program, to run every time "
                         "the program does."),
                code=("Test eqn.primitive in FOLDABLE before anything else; every other "
                      "equation is kept, with its inputs read through known.")),
        },
    ),
    Exercise(
        id="ex07_rule", points=2, title="A new simplify rule: x - x -> 0 for integers",
        chapter="07_cleanup_passes", section="3. `simplify`: small, exact rewrite rules",
        hint=Hint(
            pitfall=("x - x is 0 only when both inputs are the same Var and only for integers "
                     "(for floats inf - inf is NaN); everything else returns None. A literal "
                     "is a scalar, so an array output needs an equation that defines it. The "
                     "failed case counts the sub x x left and shows the values."),
            code=("Test x is y and out.aval.dtype.kind in 'iu'. A scalar output is replaced "
                  "by a literal zero of its type, mj.Lit(0, out.aval); an array output by a "
                  "list with one broadcast_in_dim equation that reads a scalar zero "
                  "(out.aval.update(shape=())) and defines the equation's own output.")),
        probe=probe_rule, reference=lambda: {"sub_self": _reference_sub_self},
        public=(*_RULE_PUBLIC, switch_in_case("ex07_rule")), hidden=_RULE_HIDDEN,
        error_hints={
            "PieceError": Hint(
                pitfall=("minijit checked what your rule returned for one equation and found "
                         "it wrong (the message names the equation and says why): the rule "
                         "may rewrite only x - x of one integer variable, and only into zeros "
                         "of the output's own type."),
                code=_ARRAY_HINT.code),
            "PassError": _ARRAY_HINT,
            "AssertionError": Hint(
                pitfall=("A literal holds a scalar only (its aval has shape ()): an array of "
                         "zeros cannot be one."),
                code=_ARRAY_HINT.code),
        },
    ),
    Exercise(
        id="ex07_cse", points=3, title="Common subexpression elimination",
        chapter="07_cleanup_passes", section="4. `cse`: compute each distinct expression once",
        hint=Hint(
            pitfall=("Two equations compute the same thing when their primitive, their params "
                     "and their inputs are the same, and the inputs only after the duplicates "
                     "before them were renamed (chains), in any order for a commutative "
                     "primitive. An equation with effects never merges, and every jaxpr, "
                     "sub-jaxprs too, is cleaned on its own. The failed case names the "
                     "duplicates left, or shows what changed in the values or the printed "
                     "text."),
            code=("Keep replaced = {id(var): earlier var} and seen = {key: outvars}. For each "
                  "eqn: read its invars through replaced, eqn = map_subjaxprs(eqn, my_cse), "
                  "key = (eqn.primitive, input keys (sorted for COMMUTATIVE), "
                  "tuple(sorted(eqn.params.items()))); if not has_effects(eqn) and the key is "
                  "in seen, map each outvar to the earlier one and drop the equation. Read the "
                  "jaxpr's outvars through replaced too.")),
        probe=probe_cse, reference=_reference_cse,
        public=(*_CSE_PUBLIC, switch_in_case("ex07_cse")), hidden=_CSE_HIDDEN,
        error_hints={
            "PieceError": Hint(_PIECE_HINT + " Merging only removes equations: the invars, "
                               "the outputs' types and every equation with effects stay (two "
                               "debug.prints print twice).", _EFFECTS_HINT.code),
            "PassError": _PASS_ERROR_HINT, "AttributeError": _CLOSED_HINT},
    ),
]


# ------------------------------------------------------------------------ the build track
#
# ex07_dce and ex08_fusion_groups grade two pieces of minijit (`minijit.build`): each case is
# one program, traced, then optimized by minijit's pipeline with the learner's piece switched
# in (`build.use(..., verify=False)`), so `run_passes` calls it where it calls minijit's own,
# with its checks (a wrong result is a PieceError naming the piece) and its typecheck. The
# pipeline is PIPELINE without `simplify`: a rule a notebook left in RULES must not fail
# these exercises. The values the optimized program computes (and what it prints) must equal
# those of minijit's own pipeline, and a property is measured on the result.


def probe_dce(ns, source, args):
    import minijit as mj
    from minijit.grading.optimizer_probes import dead_equations, optimized_with, traced
    from minijit.passes.dce import _effects

    closed, leaves = traced(source, args, dead_copy=True)
    out = optimized_with("dce", get(ns, "dce_jaxpr"), closed)
    with np.errstate(all="ignore"):
        values, text = printed(mj.eval_jaxpr, out.jaxpr, out.consts, *leaves)
    return {"values": [np.asarray(v) for v in values], "printed": text,
            "dead_left": dead_equations(out.jaxpr), "effects_kept": _effects(out.jaxpr)}


def _reference_dce():
    import minijit as mj
    from minijit.passes.rewrite import has_effects, map_subjaxprs

    def dce_jaxpr(jaxpr):
        live = {id(a) for a in jaxpr.outvars if isinstance(a, mj.Var)}
        kept = []
        for eqn in reversed(jaxpr.eqns):
            if not has_effects(eqn) and not any(id(v) in live for v in eqn.outvars):
                continue
            eqn = map_subjaxprs(eqn, dce_jaxpr)
            kept.append(eqn)
            live.update(id(a) for a in eqn.invars if isinstance(a, mj.Var))
        constvars = tuple(v for v in jaxpr.constvars if id(v) in live)
        return mj.Jaxpr(constvars, jaxpr.invars, tuple(reversed(kept)), jaxpr.outvars)

    return {"dce_jaxpr": dce_jaxpr}


def _catalogue_rest(public) -> tuple[Case, ...]:
    from minijit.grading.programs import PROGRAMS

    return program_hidden(PROGRAMS, public)


_DCE_PUBLIC_NAMES = ("sin_cos", "two_outputs", "unread_output", "cond", "fori_loop")
_DCE_EFFECTS_HINT = Hint(
    pitfall=("An equation with effects stays even when nothing reads its outputs (a "
             "debug.print has none), and so does a cond whose branch prints, although cond is "
             "not an effectful primitive. Compare the printed text of the failed case."),
    code=("Keep an equation when has_effects(eqn) (it looks inside sub-jaxprs too; "
          "eqn.primitive.effectful does not)."))
_DCE_SUB_HINT = Hint(
    pitfall=("Sub-jaxprs (branches, loop bodies) have dead code of their own, and the "
             "property is checked at every level."),
    code="Clean each kept equation with map_subjaxprs(eqn, dce_jaxpr).")

_DCE_PUBLIC = program_cases(_DCE_PUBLIC_NAMES) + (
    source_case("dead chains: sin then cos, never read",
             "def f(x):\n    a = mnp.cos(mnp.sin(x))\n    b = mnp.exp(x) * 2.0\n"
             "    return x + 1.0", _F3),
    source_case("a debug.print stays", "def f(x):\n    mj.debug.print('x = {}', x * 2.0)\n"
             "    return mnp.sin(x)", _F3, hint=_DCE_EFFECTS_HINT),
    source_case("dead code inside a fori_loop body",
             "def f(x):\n    def body(i, c):\n        unused = mnp.exp(c) * 3.0\n"
             "        return c * 0.5\n    return lax.fori_loop(0, 3, body, x)", _F3,
             hint=_DCE_SUB_HINT),
)

# A cond is not an effectful primitive, but a branch that prints makes it one to keep: a
# dce that asks eqn.primitive.effectful instead of has_effects(eqn) drops it.
_DCE_LOUD_COND = source_case(
    "an unread cond whose branch prints stays",
    "def f(p, x):\n    def loud(x):\n        mj.debug.print('branch {}', x)\n"
    "        return x * 2.0\n    lax.cond(p, loud, lambda x: x, x)\n"
    "    return x - 1.0", (True, "bool"), _F3, hint=_DCE_EFFECTS_HINT)
_DCE_HIDDEN = _catalogue_rest(_DCE_PUBLIC_NAMES) + (
    _DCE_LOUD_COND,
    source_case("an unread cond without effects goes",
             "def f(p, x):\n    lax.cond(p, lambda x: mnp.sin(x), lambda x: x, x)\n"
             "    return x * 3.0", (False, "bool"), _F3),
    source_case("dead code in both branches of a cond",
             "def f(p, x):\n    def a(x):\n        unused = mnp.tanh(x)\n        return x + 1.0\n"
             "    def b(x):\n        unused = mnp.exp(x) + 2.0\n        return -x\n"
             "    return lax.cond(p, a, b, x)", (True, "bool"), _F3, hint=_DCE_SUB_HINT),
    source_case("a cond output nobody reads", "def f(p, x):\n    a, b = lax.cond(p, lambda x: "
             "(x * 2.0, mnp.sin(x)), lambda x: (x - 1.0, x), x)\n    return a",
             (True, "bool"), _F3),
    source_case("a debug.print inside a loop body",
             "def f(x):\n    def body(i, c):\n        mj.debug.print('c = {}', c)\n"
             "        unused = c * 9.0\n        return c + 1.0\n"
             "    return lax.fori_loop(0, 2, body, x)", _F3, hint=_DCE_EFFECTS_HINT),
    source_case("nothing is dead", "def f(x, y):\n    return mnp.sin(x) * y, x - y", _F3, _F3),
    source_case("a captured constant that only dead code reads",
             "W = np.array([1.0, 2.0, 3.0])\n\ndef f(x):\n    unused = x * W\n"
             "    return x + 1.0", _F3,
             hint=("A constvar only dead code reads is dead too: keep the constvars that "
                   "a kept equation or an output reads, and drop the others.")),
)


EXERCISES += [
    Exercise(
        id="ex07_dce", points=3, title="minijit's dead code elimination, dce_jaxpr",
        chapter="07_cleanup_passes",
        section="5. `dce`: drop what no output needs",
        hint=Hint(
            pitfall=("Liveness runs backwards: an equation is live when an output of the "
                     "jaxpr, or an input of a live equation after it, is one of its outputs. "
                     "Equations with effects are always live; invars never go. The failed "
                     "case counts the dead equations left and the effects kept."),
            code=("Walk reversed(jaxpr.eqns) with a set live of id(var), starting from the "
                  "outvars that are Vars; skip an equation when not has_effects(eqn) and none "
                  "of its outvars is live, else clean it with map_subjaxprs(eqn, dce_jaxpr) "
                  "and add its invars to live. Keep the live constvars and return "
                  "mj.Jaxpr(constvars, jaxpr.invars, kept in program order, jaxpr.outvars).")),
        probe=probe_dce, reference=_reference_dce,
        public=(*_DCE_PUBLIC, _DCE_LOUD_COND, switch_in_case("ex07_dce")), hidden=_DCE_HIDDEN,
        error_hints={
            "PieceError": Hint(_PIECE_HINT + " Only remove: keep the invars, the outputs and "
                               "every equation that has effects or a live output."),
            "PassError": _PASS_ERROR_HINT,
        },
    ),
]
