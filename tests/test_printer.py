"""Golden jaxpr strings: the printer's layout is part of the course (chapters show it).

Exact string equality, in JAX's layout: `{ lambda consts ; args. let eqns in (outs) }`, every
binder typed, literals typed (`2.0:f64[]`), params sorted, names in order of appearance.
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
            c:f64[3,3] = dot_general[dimension_numbers=(((1,), (0,)), ((), ())) preferred_element_type=float64] a b
            d:f64[] = reduce_sum[axes=(0, 1)] a
            e:f64[3,3] = add c d
          in (e,) }
        """,  # noqa: E501
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
        { lambda a:f64[3] ; b:f64[3]. let
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
        { lambda ; a:f64[2]. let
            b:f64[2] = mul a 3.0:f64[]
          in (b,) }
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
                { lambda ; e:f64[2]. let
                    f:f64[2] = mul e 2.0:f64[]
                  in (f,) }
                { lambda ; g:f64[2]. let
                    h:f64[2] = add g 1.0:f64[]
                  in (h,) }
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
              jaxpr={ lambda ; a:f64[2]. let
                  b:f64[2] = mul a 2.0:f64[]
                in (b,) }
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
