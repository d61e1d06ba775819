"""LLVM IR text -> machine code in this process -> a Python callable.

`compile_ir(text, entry_name)` optimizes the module at LLVM's level 3 (loops vectorized, as
Numba's default), makes its machine code with MCJIT for this CPU, and returns a
`CompiledModule` whose `function` is the entry, wrapped as a built-in Python function
(`PyCFunction` with `METH_FASTCALL`): calling it passes the argument objects straight to the
machine code, with no conversion in between (`emit.py` writes an entry that reads each
array's data pointer itself).

Invariant: the machine code lives as long as the `CompiledModule` (the engine owns it), and
`function` keeps its `CompiledModule` alive, so the code outlives every reference to it. The
same text compiles once while its `CompiledModule` is in use (a module-level weak cache).

One compile at a time (`compiling()`): LLVM's global context is shared with Numba, and is not
safe to use from two threads. minijit's compiles, these and the Numba backend's
(`codegen/compile.py`), hold `COMPILE_LOCK`; these also hold Numba's own compiler lock where
Numba is loaded, which every Numba compile holds. This module does not load Numba: a program
the LLVM backend compiles does not pay for importing it (about 0.4 s of a new process's
first call). While Numba is not loaded, a Numba compile that starts is the Numba backend's,
which waits for `COMPILE_LOCK` first, so both locks are always taken in one order; not
excluded is a compile of one's own Numba code in another thread that first imported Numba
while an LLVM compile was under way.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
import weakref
from contextlib import contextmanager

import llvmlite.binding as llvm

METH_FASTCALL = 0x80


class _MethodDef(ctypes.Structure):  # CPython's PyMethodDef
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_function = ctypes.pythonapi.PyCFunction_NewEx
_new_function.restype = ctypes.py_object
_new_function.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


@functools.cache
def _initialized() -> bool:
    """LLVM's native target, once; and the C-API symbols the entries call."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for name in ("Py_IncRef", "PyErr_NoMemory"):
        llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
    llvm.add_symbol("_Py_NoneStruct", id(None))  # the object None (CPython: id is the address)
    return True


def target_machine() -> llvm.TargetMachine:
    """This CPU, all of its features, level 3. A new one each time: an execution engine
    takes the one it is given, and destroys it with itself."""
    _initialized()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, jit=True)


class CompiledModule:
    """The engine that owns a module's machine code, and its entry as a Python function."""

    def __init__(self, engine, entry_name: str):
        self.engine = engine
        address = engine.get_function_address(entry_name)
        self._method = _MethodDef(entry_name.encode(), address, METH_FASTCALL, None)
        # The function's `self` is this object, which it keeps alive (a cycle the garbage
        # collector frees): whoever holds the function holds the machine code it runs.
        self.function = _new_function(ctypes.addressof(self._method), self, None)


# The modules compiled in this process, by their text without its first line (the module's
# name): a program traced again (a notebook cell run again defines a new function) finds its
# machine code here, as long as something still uses it.
_compiled: weakref.WeakValueDictionary[str, CompiledModule] = weakref.WeakValueDictionary()


COMPILE_LOCK = threading.RLock()


@contextmanager
def compiling():
    """Held while minijit compiles: `COMPILE_LOCK`, then Numba's lock where Numba is loaded."""
    with COMPILE_LOCK:
        numba_lock = sys.modules.get("numba.core.compiler_lock")
        if numba_lock is None:
            yield
        else:
            with numba_lock.global_compiler_lock:
                yield


def compile_ir(text: str, entry_name: str) -> CompiledModule:
    key = f"{entry_name}\n{text.partition(chr(10))[2]}"
    with compiling():
        found = _compiled.get(key)
        if found is not None:
            return found
        machine = target_machine()
        module = llvm.parse_assembly(text)
        module.triple, module.data_layout = machine.triple, str(machine.target_data)
        module.verify()
        tuning = llvm.create_pipeline_tuning_options(speed_level=3)
        tuning.loop_vectorization = True
        tuning.slp_vectorization = True
        # No unrolling: LLVM would copy a loop of a constant trip count (`fori_loop` 0 to
        # 4) whole, with every loop inside it, and take 3 to 4 times as long to compile
        # control flow 2 and 3 deep. The vectorizer still interleaves its vector loops.
        tuning.loop_unrolling = False
        builder = llvm.create_pass_builder(machine, tuning)
        builder.getModulePassManager().run(module, builder)
        engine = llvm.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        compiled = _compiled[key] = CompiledModule(engine, entry_name)
        return compiled
