"""The width generated loops are vectorized at (`minijit/codegen/vector_width.py`).

What must hold on any machine: the choice follows the CPU and `config.vector_width`; the
attribute reaches the functions minijit generates on both backends, and never the user's own
Numba code; the width is part of the disk cache's key; and a width changes speed only, never
a value. On an AVX-512 machine the machine code is also checked for 512-bit registers.
"""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from numba.core.codegen import CPUCodeLibrary

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.codegen import compile as cc
from minijit.codegen import vector_width
from minijit.codegen.lower import Source

ATTRIBUTE = '"prefer-vector-width"="{}"'


def gelu(x):
    return 0.5 * x * (1.0 + mnp.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def compiled_here(width: int, **options):
    """Numba's dispatcher for a GELU program no other test compiles (its own constant), at
    `width`, compiled in this process: code loaded from the disk cache cannot be inspected."""
    x = np.linspace(-3, 3, 1000)
    with mj.config.override("vector_width", width), mj.config.override("disk_cache", False):
        f = mj.jit(lambda x: gelu(x) + 0.0123456789, backend="numba", **options)
        return f.lower(x).compile().executable.entry


def programs():
    """Elementwise math that inlines `vecmath`, and a reduction, each a fresh function (jit's
    cache belongs to the function: one per width)."""
    return {
        "gelu": lambda x: gelu(x),
        "exp_log": lambda x: mnp.log1p(mnp.exp(-mnp.abs(x))) + lax.logistic(x),
        "sum": lambda x: mnp.sum(x * x, axis=0),
    }


@pytest.mark.parametrize("name, avx512, expected", [
    ("icelake-server", True, 512),
    ("sapphirerapids", True, 512),
    ("skylake-avx512", True, None),  # LLVM's own choice
    ("znver3", False, None),
    ("icelake-server", False, None),  # a CPU whose AVX-512 is switched off (a VM)
])
def test_the_cpu_chooses_unless_the_config_does(monkeypatch, name, avx512, expected):
    monkeypatch.setattr(vector_width, "_host", lambda: (name, avx512))
    assert vector_width.preferred() == expected
    for width in vector_width.WIDTHS:
        with mj.config.override("vector_width", width):
            assert vector_width.preferred() == width
            assert vector_width.attribute() == ATTRIBUTE.format(width)


@pytest.mark.parametrize("bad", [300, "512", 1024, True])
def test_a_width_that_is_not_one_names_the_ones_that_are(bad):
    with mj.config.override("vector_width", bad):
        with pytest.raises(ValueError, match=r"None \(the CPU's best\), 128, 256 or 512"):
            mj.jit(lambda x: x * 3.0 + 1.0, backend="numba")(np.ones(3))


@pytest.mark.parametrize("width", [256, 512])
def test_the_llvm_backend_marks_its_functions(width):
    x = np.linspace(-3, 3, 1000)
    with mj.config.override("vector_width", width):
        text = mj.jit(lambda x: gelu(x), backend="llvm").lower(x).as_text()
    defines = [line for line in text.splitlines() if line.startswith("define")]
    assert len(defines) == 2 and all(ATTRIBUTE.format(width) in d for d in defines), defines


@pytest.mark.parametrize("width", [256, 512])
@pytest.mark.parametrize("parallel", [False, True])
def test_the_numba_backend_marks_the_programs_functions_only(width, parallel):
    x = np.linspace(-3, 3, 1000)
    entry = compiled_here(width, parallel=parallel)
    llvm_text = "\n".join(entry.inspect_llvm().values())
    assert ATTRIBUTE.format(width) in llvm_text
    assert CPUCodeLibrary.add_ir_module.__name__ == "add_ir_module"  # put back

    @numba.njit
    def users_own(a):
        return a * 2.0 + 1.0

    users_own(x)  # compiled outside minijit's compile: LLVM's width
    own = _attributes_of_defined("\n".join(users_own.inspect_llvm().values()), "users_own")
    assert own and not any("prefer-vector-width" in a for a in own.values()), own


def _attributes_of_defined(llvm_text: str, name_part: str) -> dict[str, str]:
    """{function name: its attributes} for the functions defined in `llvm_text` whose names
    contain `name_part` (attributes are written in groups: `#3` ... `attributes #3 = {...}`)."""
    groups = dict(re.findall(r"^attributes (#\d+) = \{(.*)\}$", llvm_text, re.M))
    found = {}
    for name, attrs in re.findall(r'^define .*?@"?([^"(]+)"?\(.*\)([^{]*)\{?$', llvm_text, re.M):
        if name_part in name:
            found[name] = " ".join(groups.get(a, a) for a in attrs.split())
    return found


def test_a_failure_inside_the_block_puts_numba_back():
    original = CPUCodeLibrary.add_ir_module
    with mj.config.override("vector_width", 512):
        with pytest.raises(RuntimeError, match="inside"):
            with vector_width.numba_functions():
                assert CPUCodeLibrary.add_ir_module is not original
                raise RuntimeError("inside")
    assert CPUCodeLibrary.add_ir_module is original


def test_the_width_is_part_of_the_disk_caches_key():
    source = Source("def entry(a):\n    return a\n")
    keys = set()
    for width in (None, *vector_width.WIDTHS):
        with mj.config.override("vector_width", width):
            keys.add(cc.source_hash(source, "(float64[::1],)"))
    assert len(keys) == 1 + len(vector_width.WIDTHS) - (vector_width.preferred() is not None)


@pytest.mark.parametrize("backend", ["numba", "llvm"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_width_changes_no_value(backend, dtype):
    """Elementwise code is the same arithmetic lane by lane at every width: equal bit for bit.
    A sum's partial sums are grouped by the vector's lanes: equal up to rounding."""
    x = np.random.default_rng(3).normal(0, 4, (257, 33)).astype(dtype)
    results = {}
    for width in (128, 256, 512):
        with mj.config.override("vector_width", width):
            results[width] = {name: np.asarray(mj.jit(f, backend=backend)(x))
                              for name, f in programs().items()}
    for width in (128, 256):
        for name in ("gelu", "exp_log"):
            np.testing.assert_array_equal(results[width][name], results[512][name], name)
        np.testing.assert_allclose(results[width]["sum"], results[512]["sum"],
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(results[512]["gelu"], np.asarray(gelu(x)),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_wide_registers_on_a_cpu_that_has_them():
    """The machine code of a GELU of 1,000 float64 elements at width 512 uses the 512-bit
    registers (zmm) where the CPU has them, and never where it does not."""
    _, avx512 = vector_width._host()
    entry = compiled_here(512)
    asm = "\n".join(entry.inspect_asm().values())
    assert ("%zmm" in asm) == avx512
