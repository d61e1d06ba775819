"""`minijit.numpy` (imported as `mnp`): a `jax.numpy`-like subset of NumPy (chapters 02-04).

Each function promotes dtypes as JAX does (the join in JAX's lattice, `dtypes.result_type`)
and broadcasts shapes as NumPy does, then calls the strict primitives of `minijit.lax`, so a
traced function's Jaxpr shows every conversion explicitly.
The same code runs eagerly outside `jit`: `bind` then evaluates on NumPy and returns `Array`s.
As in JAX, only `asarray`/`array` convert lists and tuples: any other function given one as
an array argument raises JAX's TypeError (`_edge._requires_arraylike`), eagerly and traced
alike.

Defaults are JAX's in 64-bit mode (float64, int64). Float functions (`sqrt`, `exp`, `/`) turn
ints into floats as JAX does: float32 for bools and ints narrower than 64 bits, float64 for
int64 and uint64 (NumPy: float16 for int8 and bool).

This file is the public namespace only; the code lives in modules named as in JAX's
`jax/_src/numpy`, each importing only the ones listed before it:
- `_edge.py`: what every public function is wrapped in (the list/tuple TypeError, and the API
  boundary that hides minijit's frames from a learner's traceback);
- `util.py`: what an argument becomes: `asarray`, `astype`, dtype promotion, broadcasting;
- `searching.py`: `nonzero`, `flatnonzero`, `argwhere` (and one-argument `where`), whose
  result length is data-dependent unless `size=` is given;
- `ufuncs.py`: elementwise functions: arithmetic, comparisons, logical, `exp`, `where`,
  rounding (`round`, halves to even), `isclose`, ...;
- `lax_numpy.py`: shapes (`reshape`, `concatenate`, `stack`, `split`, `roll`, `tile`,
  `diagonal`, `tril`, ...), `arange`, `eye`;
- `array_creation.py`: `full`, `zeros`, `ones`, `*_like`, `linspace`, `logspace`, windows;
- `reductions.py`: `sum`, `mean`, `var`, `argmax`, `all`, `any`, the `nan*` reductions,
  the running ones (`cumsum`, `cumprod`: `lax.associative_scan`), and `dot`, `matmul`,
  `tensordot` (every contraction a matrix product of reshaped operands);
- `convolution.py`: `convolve` and `correlate`, a sliding window and one `dot_general`.
Nothing in them imports this package. tests/test_jax_names.py lists the `jax.numpy` names
minijit does not have, grouped with the reason (no complex dtypes, no sort, no gather, ...).
"""

import numpy as np

from minijit.array import Array
from minijit.numpy.array_creation import *  # noqa: F403 - its __all__: every public function
from minijit.numpy.convolution import *  # noqa: F403 - its __all__: every public function
from minijit.numpy.lax_numpy import *  # noqa: F403 - its __all__: every public function
from minijit.numpy.reductions import *  # noqa: F403 - its __all__: every public function
from minijit.numpy.searching import *  # noqa: F403 - its __all__: every public function
from minijit.numpy.ufuncs import *  # noqa: F403 - its __all__: every public function
from minijit.numpy.util import *  # noqa: F403 - its __all__: every public function

# dtype names, so `mnp.float32` works as in JAX (the defaults are 64-bit, as with x64)
bool_ = bool = np.bool_  # noqa: A001 - JAX's name
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
int_, uint, float_, double, single = np.int64, np.uint64, np.float64, np.float64, np.float32
# NumPy's abstract dtype classes, for `mnp.issubdtype(x.dtype, mnp.floating)`
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
finfo, iinfo, issubdtype, isdtype, can_cast = (
    np.finfo, np.iinfo, np.issubdtype, np.isdtype, np.can_cast)
pi, e, inf, nan, euler_gamma = np.pi, np.e, np.inf, np.nan, np.euler_gamma
newaxis = None
ndarray = Array
dtype = np.dtype
# NumPy's own helpers, which JAX re-exports too: printing, index expressions, iterability
get_printoptions, set_printoptions, printoptions = (
    np.get_printoptions, np.set_printoptions, np.printoptions)
array_repr, array_str = np.array_repr, np.array_str
s_, index_exp, iterable = np.s_, np.index_exp, np.iterable
