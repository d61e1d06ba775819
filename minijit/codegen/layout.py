"""`c_view`: a leading-axis slice of a C-contiguous array, typed as the C array it is.

Numba types every slice `x[a:b, :]` of a C-contiguous array as layout 'A' (any strides),
though its elements are contiguous: only the leading axis is cut. An 'A' array cannot be
reshaped, and loops over it index with strides. The generated code wraps such slices in
`c_view`, which hands back the same array (a new reference, no copy) typed as layout 'C'.

Invariant (the caller's duty): the argument really is C-contiguous, i.e. a unit-step slice of
the leading axis of a C-contiguous array, with every other axis whole (`array_rules._slice`).
Typing an array with other strides as 'C' would make the compiled code read the wrong bytes.

Numba's threaded loops (`prange`) are told that the result is the argument's memory
(`alias_func_extensions`): not knowing it, Numba dropped a threaded loop that wrote into a
`c_view` of an array as dead code, since nothing read the view afterwards.
"""

from __future__ import annotations

from numba import types
from numba.core import ir_utils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic


@intrinsic
def c_view(typingctx, array):
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        # Every layout has the same data model (data pointer, shape, strides): the value
        # itself is the C array; `borrowed` adds the reference the result owns.
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return array.copy(layout="C")(array), codegen


def _aliases_its_argument(lhs_name, args, alias_map, arg_aliases):
    ir_utils._add_alias(lhs_name, args[0].name, alias_map, arg_aliases)


ir_utils.alias_func_extensions[("c_view", __name__)] = _aliases_its_argument
