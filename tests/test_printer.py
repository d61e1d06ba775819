"""Golden jaxpr strings: the printer's layout is part of the course (chapters show it).

Exact string equality, in JAX's layout: `{ lambda consts; args. let eqns in (outs) }`, every
binder typed, literals typed (`2.0:f64[]`), params sorted, names in order of appearance, an
output nothing reads printed `_`, and JAX's pretty-printing rule for line breaks: whatever fits
in 80 columns (a short jaxpr, a param list) stays on one line. The last section holds JAX's
own text for the same programs.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.ir import _name_for

CONST = np.arange(3.0)


def jaxpr_str(f, *args, **kw) -> str:
    return str(mj.make_jaxpr(f, **kw)(*args))


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def seed_example(x, y):
    return mnp.dot(x, y) + mnp.sum(x)


@mj.jit
def _jitted_double(x):
    return x * 2.0


CASES = {
    "seed_dot_plus_sum": (
        seed_example, (np.ones((3, 3)), np.ones((3, 3))), {},
        """
        { lambda ; a:f64[3,3] b:f64[3,3]. let
            c:f64[3,3] = dot_general[
              dimension_numbers=(([1], [0]), ([], []))
              preferred_element_type=float64
            ] a b
            d:f64[] = reduce_sum[axes=(0, 1)] a
            e:f64[3,3] = add c d
          in (e,) }
        """,
    ),
    "literals_weak_int_then_float": (
        lambda x: x * 2 + 1.5, (np.ones(3, np.int32),), {},
        """
        { lambda ; a:i32[3]. let
            b:i32[3] = mul a 2:i32[]
            c:f64[3] = convert_element_type[new_dtype=float64 weak_type=True] b
            d:f64[3] = add c 1.5:f64[]
          in (d,) }
        """,
    ),
    "float32_literal_stays_float32": (
        lambda x: x * 2.0 - 1, (np.ones((2, 2), np.float32),), {},
        """
        { lambda ; a:f32[2,2]. let
            b:f32[2,2] = mul a 2.0:f32[]
            c:f32[2,2] = sub b 1.0:f32[]
          in (c,) }
        """,
    ),
    "constvar_closed_over_array": (
        lambda x: x * CONST + CONST.sum(), (np.ones(3),), {},
        """
        { lambda a:f64[3]; b:f64[3]. let
            c:f64[3] = mul b a
            d:f64[3] = add c 3.0:f64[]
          in (d,) }
        """,
    ),
    "multiple_outputs": (
        lambda x: (x + 1.0, x * 2.0), (np.ones(2),), {},
        """
        { lambda ; a:f64[2]. let
            b:f64[2] = add a 1.0:f64[]
            c:f64[2] = mul a 2.0:f64[]
          in (b, c) }
        """,
    ),
    "pytree_outputs_sorted_dict_keys": (
        lambda x: {"b": x.sum(), "a": (x, -x)}, (np.ones(2),), {},
        """
        { lambda ; a:f64[2]. let
            b:f64[] = reduce_sum[axes=(0,)] a
            c:f64[2] = neg a
          in (a, c, b) }
        """,
    ),
    "no_equations": (
        lambda x: x, (np.ones((2, 3), np.float32),), {},
        "{ lambda ; a:f32[2,3]. let  in (a,) }",
    ),
    "literal_outputs": (
        lambda x: (x, 1.0, 2), (np.ones(2),), {},
        "{ lambda ; a:f64[2]. let  in (a, 1.0:f64[], 2:i64[]) }",
    ),
    "promotion_convert_element_type": (
        lambda x, y: x + y, (np.ones(3, np.int32), np.ones(3, np.float32)), {},
        """
        { lambda ; a:i32[3] b:f32[3]. let
            c:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a
            d:f32[3] = add c b
          in (d,) }
        """,
    ),
    "traced_index": (
        lambda x, i: x[i], (np.ones(5), np.int32(1)), {},
        """
        { lambda ; a:f64[5] b:i32[]. let
            c:bool[] = lt b 0:i32[]
            d:i32[] = add b 5:i32[]
            e:i32[] = select_n c b d
            f:f64[1] = dynamic_slice[slice_sizes=(1,)] a e
            g:f64[] = squeeze[dimensions=(0,)] f
          in (g,) }
        """,
    ),
    "static_argument_becomes_literal": (
        lambda x, n: x * n, (np.ones(2), 3), {"static_argnums": (1,)},
        """
        { lambda ; a:f64[2]. let b:f64[2] = mul a 3.0:f64[] in (b,) }
        """,
    ),
    "keepdims_reshape": (
        lambda x: mnp.sum(x, axis=1, keepdims=True), (np.ones((2, 3), np.float32),), {},
        """
        { lambda ; a:f32[2,3]. let
            b:f32[2] = reduce_sum[axes=(1,)] a
            c:f32[2,1] = reshape[new_sizes=(2, 1)] b
          in (c,) }
        """,
    ),
    "cond_sub_jaxprs": (
        lambda p, x: lax.cond(p, lambda v: v + 1.0, lambda v: v * 2.0, x),
        (True, np.ones(2)), {},
        """
        { lambda ; a:bool[] b:f64[2]. let
            c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
            d:f64[2] = cond[
              branches=(
                { lambda ; e:f64[2]. let f:f64[2] = mul e 2.0:f64[] in (f,) }
                { lambda ; g:f64[2]. let h:f64[2] = add g 1.0:f64[] in (h,) }
              )
            ] c b
          in (d,) }
        """,
    ),
    # JAX's layout: `name` first, the body's binders named after the caller's atoms (the one
    # place where a name is bound twice). JAX puts this short body on one line, as it breaks
    # lines by width; tests/test_nested_jit.py has programs it prints exactly so.
    "nested_jit_call": (
        lambda x: _jitted_double(x) + 1.0, (np.ones(2),), {},
        """
        { lambda ; a:f64[2]. let
            b:f64[2] = jit[
              name=_jitted_double
              jaxpr={ lambda ; a:f64[2]. let b:f64[2] = mul a 2.0:f64[] in (b,) }
            ] a
            c:f64[2] = add b 1.0:f64[]
          in (c,) }
        """,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_golden(name):
    f, args, kw, expected = CASES[name]
    assert jaxpr_str(f, *args, **kw) == golden(expected)


def test_printing_is_deterministic():
    def f(x, y):
        return mnp.tanh(x @ y) * 2.0 + CONST[:2].sum()

    args = (np.ones((2, 3)), np.ones((3, 2)))
    closed = mj.make_jaxpr(f)(*args)
    assert str(closed) == str(closed)
    assert repr(closed) == str(closed)
    assert str(mj.make_jaxpr(f)(*args)) == str(closed)  # a second trace prints the same


def _binder_names(text: str) -> list[str]:
    """Names in order of first appearance as binders (`a:f64[3]`)."""
    seen = []
    for name in re.findall(r"\b([a-z]+):(?:bool|[iuf]\d+)\[", text):
        if name not in seen:
            seen.append(name)
    return seen


def test_names_follow_order_of_appearance_past_z():
    def chain(x):
        for _ in range(30):
            x = x + 1.0
        return x

    text = jaxpr_str(chain, np.ones(2))
    names = _binder_names(text)
    assert len(names) == 31
    assert names == [_name_for(i) for i in range(31)]
    assert names[25:28] == ["z", "ba", "bb"]
    lines = text.splitlines()
    assert lines[0] == "{ lambda ; a:f64[2]. let"
    assert lines[26] == "    ba:f64[2] = add z 1.0:f64[]"
    assert lines[-1] == "  in (be,) }"


def test_name_sequence():
    assert [_name_for(i) for i in (0, 1, 25, 26, 27, 51, 52, 26 * 26 - 1, 26 * 26)] == [
        "a", "b", "z", "ba", "bb", "bz", "ca", "zz", "baa",
    ]


def test_constvars_and_sub_jaxprs_share_one_naming():
    def f(x):
        return lax.cond(x.sum() > 0, lambda v: v * CONST, lambda v: v, x)

    names = _binder_names(jaxpr_str(f, np.ones(3)))
    assert names == [_name_for(i) for i in range(len(names))]
    assert len(names) == len(set(names))


def test_params_are_sorted():
    text = jaxpr_str(lambda x: x[1:3:2], np.ones(5))
    params = re.search(r"slice\[(.*)\]", text).group(1)
    keys = re.findall(r"(\w+)=", params)
    assert keys == sorted(keys) == ["limit_indices", "start_indices", "strides"]


# --------------------------------------------------------------------------- JAX's own text

# What JAX 0.10.2 prints (`jax.make_jaxpr`, with jax_enable_x64) for the same programs, written
# with `jax` / `jnp` replaced by minijit's modules: each text is JAX's, verbatim, one string per
# line. minijit prints the same text, except for the params JAX_ONLY_PARAMS lists.
x3 = np.arange(3.0)
JAX_TEXTS = {
    "dot": (
        lambda a, b: a @ b,
        (np.ones((2, 3)), np.ones((3, 4))),
        '{ lambda ; a:f64[2,3] b:f64[3,4]. let',
        '    c:f64[2,4] = dot_general[',
        '      dimension_numbers=(([1], [0]), ([], []))',
        '      preferred_element_type=float64',
        '    ] a b',
        '  in (c,) }',
    ),
    "mul": (
        lambda x: x * 2,
        (1.0,),
        '{ lambda ; a:f64[]. let b:f64[] = mul a 2.0:f64[] in (b,) }',
    ),
    "two": (
        lambda x: mnp.sin(x) * 2 + 1,
        (x3,),
        '{ lambda ; a:f64[3]. let',
        '    b:f64[3] = sin a',
        '    c:f64[3] = mul b 2.0:f64[]',
        '    d:f64[3] = add c 1.0:f64[]',
        '  in (d,) }',
    ),
    "unused": (
        lambda x: (mnp.sin(x), x)[1],
        (1.0,),
        '{ lambda ; a:f64[]. let _:f64[] = sin a in (a,) }',
    ),
    "fori_static": (
        lambda x: lax.fori_loop(0, 3, lambda i, v: v * 2.0 + i, x),
        (1.0,),
        '{ lambda ; a:f64[]. let',
        '    _:i64[] b:f64[] = scan[',
        '      jaxpr={ lambda ; c:i64[] d:f64[]. let',
        '          e:i64[] = add c 1:i64[]',
        '          f:f64[] = mul d 2.0:f64[]',
        '          g:f64[] = convert_element_type[new_dtype=float64 weak_type=True] c',
        '          h:f64[] = add f g',
        '        in (e, h) }',
        '      length=3',
        '      num_carry=2',
        '      num_consts=0',
        '      reverse=False',
        '      unroll=1',
        '    ] 0:i64[] a',
        '  in (b,) }',
    ),
    "fori_traced": (
        lambda x, n: lax.fori_loop(0, n, lambda i, v: v * 2.0 + i, x),
        (1.0, 3),
        '{ lambda ; a:f64[] b:i64[]. let',
        '    _:i64[] _:i64[] c:f64[] = while[',
        '      body_jaxpr={ lambda ; d:i64[] e:i64[] f:f64[]. let',
        '          g:i64[] = add d 1:i64[]',
        '          h:f64[] = mul f 2.0:f64[]',
        '          i:f64[] = convert_element_type[new_dtype=float64 weak_type=True] d',
        '          j:f64[] = add h i',
        '        in (g, e, j) }',
        '      body_nconsts=0',
        '      cond_jaxpr={ lambda ; k:i64[] l:i64[] m:f64[]. let',
        '          n:bool[] = lt k l',
        '        in (n,) }',
        '      cond_nconsts=0',
        '    ] 0:i64[] b a',
        '  in (c,) }',
    ),
    "fori_i32": (
        lambda x, n: lax.fori_loop(np.int32(0), n, lambda i, v: v + i, x),
        (1.0, np.int32(3)),
        '{ lambda ; a:f64[] b:i32[]. let',
        '    _:i32[] _:i32[] c:f64[] = while[',
        '      body_jaxpr={ lambda ; d:i32[] e:i32[] f:f64[]. let',
        '          g:i32[] = add d 1:i32[]',
        '          h:f64[] = convert_element_type[new_dtype=float64 weak_type=True] d',
        '          i:f64[] = add f h',
        '        in (g, e, i) }',
        '      body_nconsts=0',
        '      cond_jaxpr={ lambda ; j:i32[] k:i32[] l:f64[]. let',
        '          m:bool[] = lt j k',
        '        in (m,) }',
        '      cond_nconsts=0',
        '    ] 0:i32[] b a',
        '  in (c,) }',
    ),
    "while": (
        lambda x: lax.while_loop(lambda v: v < 10, lambda v: v * 2, x),
        (1.0,),
        '{ lambda ; a:f64[]. let',
        '    b:f64[] = while[',
        '      body_jaxpr={ lambda ; c:f64[]. let d:f64[] = mul c 2.0:f64[] in (d,) }',
        '      body_nconsts=0',
        '      cond_jaxpr={ lambda ; e:f64[]. let f:bool[] = lt e 10.0:f64[] in (f,) }',
        '      cond_nconsts=0',
        '    ] a',
        '  in (b,) }',
    ),
    "cond": (
        lambda x: lax.cond(x > 0, lambda v: v * 2, lambda v: v - 1, x),
        (1.0,),
        '{ lambda ; a:f64[]. let',
        '    b:bool[] = gt a 0.0:f64[]',
        '    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b',
        '    d:f64[] = cond[',
        '      branches=(',
        '        { lambda ; e:f64[]. let f:f64[] = sub e 1.0:f64[] in (f,) }',
        '        { lambda ; g:f64[]. let h:f64[] = mul g 2.0:f64[] in (h,) }',
        '      )',
        '    ] c a',
        '  in (d,) }',
    ),
    "switch": (
        lambda i, x: lax.switch(i, [lambda v: v, lambda v: v + 1, lambda v: v * 3], x),
        (1, 1.0),
        '{ lambda ; a:i64[] b:f64[]. let',
        '    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a',
        '    d:i32[] = clamp 0:i32[] c 2:i32[]',
        '    e:f64[] = cond[',
        '      branches=(',
        '        { lambda ; f:f64[]. let  in (f,) }',
        '        { lambda ; g:f64[]. let h:f64[] = add g 1.0:f64[] in (h,) }',
        '        { lambda ; i:f64[]. let j:f64[] = mul i 3.0:f64[] in (j,) }',
        '      )',
        '    ] d b',
        '  in (e,) }',
    ),
    "scan": (
        lambda c, xs: lax.scan(lambda c, y: (c + y, c * y), c, xs),
        (np.float64(1.0), x3),
        '{ lambda ; a:f64[] b:f64[3]. let',
        '    c:f64[] d:f64[3] = scan[',
        '      jaxpr={ lambda ; e:f64[] f:f64[]. let',
        '          g:f64[] = add e f',
        '          h:f64[] = mul e f',
        '        in (g, h) }',
        '      length=3',
        '      num_carry=1',
        '      num_consts=0',
        '      reverse=False',
        '      unroll=1',
        '    ] a b',
        '  in (c, d) }',
    ),
    "longvars": (
        lambda *xs: sum(xs[1:], xs[0]),
        tuple(np.ones((2, 3)) for _ in range(12)),
        '{ lambda ; a:f64[2,3] b:f64[2,3] c:f64[2,3] d:f64[2,3] e:f64[2,3] f:f64[2,3] g:f64[2,3]',
        '    h:f64[2,3] i:f64[2,3] j:f64[2,3] k:f64[2,3] l:f64[2,3]. let',
        '    m:f64[2,3] = add a b',
        '    n:f64[2,3] = add m c',
        '    o:f64[2,3] = add n d',
        '    p:f64[2,3] = add o e',
        '    q:f64[2,3] = add p f',
        '    r:f64[2,3] = add q g',
        '    s:f64[2,3] = add r h',
        '    t:f64[2,3] = add s i',
        '    u:f64[2,3] = add t j',
        '    v:f64[2,3] = add u k',
        '    w:f64[2,3] = add v l',
        '  in (w,) }',
    ),
    "nested": (
        lambda x: mj.jit(lambda y: y + 1)(x) * 2,
        (x3,),
        '{ lambda ; a:f64[3]. let',
        '    b:f64[3] = jit[',
        '      name=<lambda>',
        '      jaxpr={ lambda ; a:f64[3]. let b:f64[3] = add a 1.0:f64[] in (b,) }',
        '    ] a',
        '    c:f64[3] = mul b 2.0:f64[]',
        '  in (c,) }',
    ),
    "index": (
        lambda a: a[1],
        (np.ones((2, 3)),),
        '{ lambda ; a:f64[2,3]. let',
        '    b:f64[1,3] = slice[limit_indices=(2, 3) start_indices=(1, 0) strides=None] a',
        '    c:f64[3] = squeeze[dimensions=(0,)] b',
        '  in (c,) }',
    ),
    "concat": (
        lambda a: mnp.concatenate([a, a]),
        (x3,),
        '{ lambda ; a:f64[3]. let b:f64[6] = concatenate[dimension=0] a a in (b,) }',
    ),
    "cast": (
        lambda a: a.astype(mnp.int32),
        (x3,),
        '{ lambda ; a:f64[3]. let',
        '    b:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] a',
        '  in (b,) }',
    ),
    "pow": (
        lambda a: a ** 3,
        (x3,),
        '{ lambda ; a:f64[3]. let b:f64[3] = integer_pow[y=3] a in (b,) }',
    ),
    "max": (
        lambda a: mnp.max(a),
        (x3,),
        '{ lambda ; a:f64[3]. let b:f64[] = reduce_max[axes=(0,)] a in (b,) }',
    ),
    "slice": (
        lambda a: a[1:],
        (x3,),
        '{ lambda ; a:f64[3]. let',
        '    b:f64[2] = slice[limit_indices=(3,) start_indices=(1,) strides=None] a',
        '  in (b,) }',
    ),
    "reduce": (
        lambda x: mnp.sum(x * x, axis=0),
        (np.ones((2, 3)),),
        '{ lambda ; a:f64[2,3]. let',
        '    b:f64[2,3] = mul a a',
        '    c:f64[3] = reduce_sum[axes=(0,) out_sharding=None] b',
        '  in (c,) }',
    ),
    "iota": (
        lambda x: x + mnp.arange(3.0),
        (x3,),
        '{ lambda ; a:f64[3]. let',
        '    b:f64[3] = iota[dimension=0 dtype=float64 shape=(3,) sharding=None] ',
        '    c:f64[3] = add a b',
        '  in (c,) }',
    ),
    "reshape": (
        lambda a: a.reshape(3, 2).T,
        (np.ones((2, 3)),),
        '{ lambda ; a:f64[2,3]. let',
        '    b:f64[3,2] = reshape[dimensions=None new_sizes=(3, 2) sharding=None] a',
        '    c:f64[2,3] = transpose[permutation=(1, 0)] b',
        '  in (c,) }',
    ),
    "mean": (
        lambda a: mnp.mean(a),
        (np.ones((2, 3)),),
        '{ lambda ; a:f64[2,3]. let',
        '    b:f64[] = reduce_sum[axes=(0, 1) out_sharding=None] a',
        '    c:f64[] = div b 6.0:f64[]',
        '  in (c,) }',
    ),
    "sumsq_long": (
        lambda a: mnp.sqrt(mnp.sum(a ** 2)) / (1.0 + mnp.exp(-mnp.mean(a))) - mnp.tanh(a),
        (x3,),
        '{ lambda ; a:f64[3]. let',
        '    b:f64[3] = integer_pow[y=2] a',
        '    c:f64[] = reduce_sum[axes=(0,) out_sharding=None] b',
        '    d:f64[] = sqrt c',
        '    e:f64[] = reduce_sum[axes=(0,) out_sharding=None] a',
        '    f:f64[] = div e 3.0:f64[]',
        '    g:f64[] = neg f',
        '    h:f64[] = exp g',
        '    i:f64[] = add 1.0:f64[] h',
        '    j:f64[] = div d i',
        '    k:f64[3] = tanh a',
        '    l:f64[3] = sub j k',
        '  in (l,) }',
    ),
}

# Params JAX prints that minijit's primitives do not have: sharding annotations (minijit has
# one device), and reshape's `dimensions` (JAX's reshape may transpose first; minijit's never).
JAX_ONLY_PARAMS = (" sharding=None", " out_sharding=None", "dimensions=None ")


def _without_jax_only_params(text: str) -> str:
    for p in JAX_ONLY_PARAMS:
        text = text.replace(p, "")
    return text


@pytest.mark.parametrize("name", sorted(JAX_TEXTS))
def test_prints_what_jax_prints(name):
    f, args, *jax_lines = JAX_TEXTS[name]
    assert jaxpr_str(f, *args) == _without_jax_only_params("\n".join(jax_lines))


def test_jax_only_params_are_still_needed():
    """Each stripped param occurs in some JAX text; a param minijit grows must leave the list."""
    texts = " ".join(line for _, _, *lines in JAX_TEXTS.values() for line in lines)
    assert all(p in texts for p in JAX_ONLY_PARAMS)


@pytest.mark.parametrize("optimized", [False, True], ids=["traced", "optimized"])
def test_generated_code_names_every_var_as_the_printer_does(optimized):
    # name_like_the_printer walks the program without printing it; on every catalogue
    # program, traced and optimized, its names are the ones printing gives.
    from catalogue import PROGRAMS

    from minijit import ir
    from minijit.passes import run_passes

    checked = 0
    for prog in PROGRAMS:
        try:
            closed = mj.make_jaxpr(prog.minijit_fn(), static_argnums=prog.static_argnums)(
                *prog.make_args())
        except Exception:  # noqa: BLE001 - a program that raises on purpose has no jaxpr
            continue
        jaxpr = (run_passes(closed) if optimized else closed).jaxpr
        printed, walked = ir.VarNames(), ir.VarNames()
        ir._pp_jaxpr(jaxpr, printed)
        ir.name_like_the_printer(jaxpr, walked)
        assert walked.names == printed.names, prog.name
        checked += 1
    assert checked > 100
