"""Chapter 04 (jit and the cache): static arguments, and stopping recompiles.

- ``ex04_static_args`` (dynamic control flow, the book's ConcretizationTypeError): under a
  plain ``mj.jit``, ``summarize(x, n, scale, *, mode)`` fails twice, each traceback naming
  another argument (``mode`` is a string, ``n`` a slice length); making every argument
  static runs, but retraces for every new ``scale``. The learner reads the tracebacks and the
  cache-miss explanations and makes exactly ``n`` (by number or name) and ``mode`` (by name:
  it is keyword-only) static. The probe checks the values, and counts the traces over call
  sequences in which ``scale`` changes all the time.
- ``ex04_buckets`` (shape changes recompile): ``pad_to_bucket(x)`` pads to the next power of
  two (at least 8) and returns a mask. Graded by counting traces: the probe jits its own
  masked mean (a fresh function each time, so nothing the notebook cached counts) and feeds
  it the learner's padded arrays.
- ``ex04_cache_key`` (build): ``cache_key(static_values, leaf_avals, treedef) -> hashable``,
  minijit's piece ``cache_key`` (``minijit.build``), the key ``jit`` looks a call up by. Each
  case is a call sequence of ``minijit.grading.cache_probes`` (weak and strong scalars, a
  static argument's value and type, static by position and by keyword, a dict's key order,
  the pytree's structure) or a program of ``minijit.grading.programs`` called with the same
  and then other dtypes, run through ``mj.jit`` with the learner's piece switched in: the
  values, their dtypes and the trace count must be minijit's. A key that is too fine traces
  too often; one that is too coarse finds an entry traced for other arguments, which minijit
  refuses with a ``PieceError`` (it never runs it), as it refuses an unhashable key.
- ``ex04_jit_call`` (build): ``jit_call(f, args, kwargs) -> the result``, minijit's piece
  ``jit_call``, the call path of every top-level ``mj.jit`` call, written with the steps
  ``minijit/jit.py`` gives it (``f.split``, ``f.key``, ``f.lookup``, on a miss
  ``f.trace_call(call).lower().compile()`` and ``f.store``, then ``f.execute`` and
  ``entry.wrap_outputs``). Each case is a call sequence of ``minijit.grading.cache_probes``
  or a catalogue program, run with the learner's piece switched in: the values, their dtypes,
  each result's tree and the kind of its leaves (minijit Arrays, weak or not), the trace
  count and the number of cache entries must be minijit's. A piece that never stores, stores
  under another key than the one it looks up, or traces on a hit traces too often; one that
  returns the flat outputs returns the wrong tree (and plain NumPy arrays, which minijit
  refuses with a ``PieceError`` naming the fix).
"""

from __future__ import annotations

import numpy as np

from minijit.grading.build_pieces import switch_in_case
from minijit.grading.cases import Case, Exercise, Hint
from minijit.grading.probing import get

# ------------------------------------------------------------------------ ex04_static_args


def probe_static_args(ns, x, calls):
    f = get(ns, "summarize_jit")
    if not hasattr(f, "trace_count") or not hasattr(f, "clear_cache"):
        raise TypeError("summarize_jit must be a function made by mj.jit(...)")
    f.clear_cache()  # only the probe's own calls count
    before = f.trace_count
    x = np.asarray(x, dtype=np.float64)
    values = [np.asarray(f(x, n, scale, mode=mode)) for n, scale, mode in calls]
    return {"values": values, "traces": f.trace_count - before}


def _summarize(x, n, scale, *, mode):
    import minijit.numpy as mnp

    head = x[:n] * scale
    if mode == "sum":
        return mnp.sum(head)
    return mnp.max(head)


def _reference_static_args():
    import minijit as mj

    return {"summarize_jit": mj.jit(_summarize, static_argnums=1, static_argnames="mode")}


def _calls(*triples):
    return [list(t) for t in triples]


# ------------------------------------------------------------------------ ex04_buckets


def probe_buckets(ns, lengths):
    import minijit as mj
    import minijit.numpy as mnp

    pad = get(ns, "pad_to_bucket")
    traces = []

    def masked_mean(x, mask):
        traces.append(x.shape)  # runs once per trace, never on a cache hit
        return mnp.sum(x * mask) / mnp.sum(mask)

    kernel = mj.jit(masked_mean)
    means, shapes = [], []
    for n in lengths:
        x = np.arange(1.0, n + 1.0)
        padded, mask = pad(x)
        padded, mask = np.asarray(padded), np.asarray(mask)
        shapes.append(list(padded.shape))
        means.append(float(kernel(padded, mask)))
    return {"means": means, "padded_shapes": shapes, "traces": len(traces)}


def _reference_pad_to_bucket(x):
    size = max(8, 1 << (len(x) - 1).bit_length())
    padded = np.zeros(size, dtype=x.dtype)
    padded[: len(x)] = x
    mask = np.zeros(size)
    mask[: len(x)] = 1.0
    return padded, mask


# ------------------------------------------------------------------------ ex04_cache_key


def probe_cache_key(ns, scenario):
    from minijit.build import PieceError
    from minijit.grading.cache_probes import run_with_key

    try:
        return run_with_key(get(ns, "cache_key"), scenario)
    except PieceError as e:
        if isinstance(e.__cause__, NotImplementedError):  # the untouched stub
            raise e.__cause__ from None
        raise


def _reference_cache_key():
    def cache_key(static_values, leaf_avals, treedef):
        statics = tuple((where, value, type(value)) for where, value in static_values)
        return (treedef, tuple(leaf_avals), statics)

    return {"cache_key": cache_key}


# ------------------------------------------------------------------------ ex04_jit_call


def probe_jit_call(ns, scenario):
    from minijit.build import PieceError
    from minijit.grading.cache_probes import run_with_call

    try:
        return run_with_call(get(ns, "jit_call"), scenario)
    except PieceError as e:
        if isinstance(e.__cause__, NotImplementedError):  # the untouched stub
            raise e.__cause__ from None
        raise


def _reference_jit_call():
    def jit_call(f, args, kwargs):
        call = f.split(args, kwargs)
        key = f.key(call)
        entry = f.lookup(key)
        if entry is None:
            compiled = f.trace_call(call).lower().compile()
            entry = f.store(key, compiled)
        outs = f.execute(entry, call)
        return entry.wrap_outputs(outs)

    return {"jit_call": jit_call}


_JIT_CALL_PUBLIC = ("one signature, five calls", "outputs in a pytree",
                    "a static argument's value and type", "weak and strong scalars")


def _jit_call_cases(names, probe=None) -> tuple[Case, ...]:
    return tuple(Case(name if " " in name else f"program {name}", (name,), probe=probe)
                 for name in names)


def _jit_call_hidden() -> tuple[Case, ...]:
    from minijit.grading.cache_probes import SCENARIOS
    from minijit.grading.programs import PROGRAMS

    return _jit_call_cases([n for n in SCENARIOS if n not in _JIT_CALL_PUBLIC]
                           + [n for n in PROGRAMS if n != "mul_two_args"], probe_jit_call)


def _cache_key_cases(names) -> tuple[Case, ...]:
    return tuple(Case(name if " " in name else f"program {name}", (name,)) for name in names)


def _cache_key_hidden() -> tuple[Case, ...]:
    from minijit.grading.programs import PROGRAMS

    return _cache_key_cases(
        ["shapes and dtypes", "static by position and by keyword", "the pytree's structure",
         "dict keys with equal leaves"]
        + [n for n in PROGRAMS if n != "mul_two_args"])


EXERCISES = [
    Exercise(
        id="ex04_static_args", points=2, title="Static or traced? Read the tracebacks",
        chapter="04_jit_and_the_cache", section="3. Static and dynamic arguments",
        hint=Hint(
            pitfall=("An argument that decides the program's structure (a slice length, a "
                     "Python if, a string) must be static; one that only enters arithmetic "
                     "must stay traced, or every new value traces again. Each traceback names "
                     "the argument it needs; the cache-miss explanation names the one that "
                     "retraces."),
            code=("mj.jit(f, static_argnums=...) names static parameters by position, "
                  "mj.jit(f, static_argnames=...) by name; a keyword-only parameter has no "
                  "position. Check f.trace_count after calls with many scale values.")),
        probe=probe_static_args,
        reference=_reference_static_args,
        public=(
            Case("n = 2, 2, 3, scale changing, mode sum",
                 ([1.0, 2.0, 3.0, 4.0], _calls([2, 0.5, "sum"], [2, 2.0, "sum"],
                                              [3, 0.5, "sum"]))),
            Case("both modes, scale changing",
                 ([4.0, -1.0, 2.0], _calls([3, 1.0, "max"], [3, -1.0, "max"],
                                          [3, 1.0, "sum"], [3, 3.0, "max"]))),
        ),
        hidden=(
            Case("a new scale on every call",
                 ([0.5, 1.5, 2.5, 3.5, 4.5], _calls(*[[4, 0.25 * k, "sum"] for k in range(12)]))),
            Case("static values come back",
                 ([1.0, 2.0, 3.0, 4.0, 5.0], _calls([1, 1.0, "sum"], [3, 2.0, "max"],
                                                   [1, 3.0, "sum"], [3, 4.0, "max"],
                                                   [5, 5.0, "sum"], [1, 6.0, "max"]))),
            Case("2-d x: the first n rows",
                 ([[1.0, -2.0], [3.0, 4.0], [-5.0, 6.0]],
                  _calls([2, 1.0, "max"], [2, 0.5, "max"], [3, 2.0, "sum"]))),
        ),
        error_hints={
            "TracerIntegerConversionError": (
                "A slice length received a tracer: the argument is still dynamic (the "
                "traceback names it). Make it static with static_argnums or static_argnames."),
            "TypeError": ("A string cannot be traced: an argument that is a setting known "
                          "before the call must be static (the traceback names it)."),
            "ValueError": ("static_argnums counts positional parameters only; a keyword-only "
                           "parameter must be named with static_argnames."),
        },
    ),
    Exercise(
        id="ex04_buckets", points=2, title="Pad into buckets to stop recompiles",
        chapter="04_jit_and_the_cache", section="5. Padding into buckets to stop recompiles",
        hint=Hint(
            pitfall=("Every new length is a new shape and a new trace: pad to a few sizes "
                     "only (the next power of two, never below 8), and return a mask with 1.0 "
                     "on the real entries and 0.0 on the padding, so that the masked mean "
                     "does not change."),
            code=("1 << (n - 1).bit_length() is the next power of two of n (n itself when it "
                  "is one); np.zeros(size) then padded[:n] = x fills the bucket.")),
        probe=probe_buckets,
        reference=lambda: {"pad_to_bucket": _reference_pad_to_bucket},
        public=(
            Case("lengths 3, 5, 8", ([3, 5, 8],)),
            Case("lengths 9 to 16", (list(range(9, 17)),)),
        ),
        hidden=(
            Case("lengths 1 to 40", (list(range(1, 41)),)),
            Case("powers of two and one past", ([16, 17, 32, 33, 64, 65],)),
            Case("a long one", ([1000, 3, 513],)),
        ),
    ),
    Exercise(
        id="ex04_cache_key", points=3, title="minijit's cache key, cache_key",
        chapter="04_jit_and_the_cache",
        section="3. Static and dynamic arguments",
        hint=Hint(
            pitfall=("Two calls may share a compiled program exactly when everything that "
                     "changes the trace is equal: the structure, each leaf's shape, dtype and "
                     "weak type, and each static value with where it was passed (f(x, 2) and "
                     "f(x, n=2) get an entry each). 1, 1.0 and True are equal (and hash "
                     "alike) in Python, yet trace different programs; and a key goes into a "
                     "dict, so it must be hashable."),
            code=("Return a tuple: (treedef, tuple(leaf_avals), a tuple of (where, value, "
                  "type(value)) for each (where, value) in static_values). leaf_avals is a "
                  "list: a list is not hashable.")),
        probe=probe_cache_key, reference=_reference_cache_key,
        public=(*_cache_key_cases(["weak and strong scalars", "a static argument's value "
                                   "and type", "a dict's key order", "mul_two_args"]),
                # a key without the treedef: (a, b) and [a, b] trace different programs
                *_cache_key_cases(["the pytree's structure"]),
                # a key without `where`: f(x, 2) and f(x, n=2) split alike but for it
                *_cache_key_cases(["one static argument, by position and by keyword"]),
                switch_in_case("ex04_cache_key")),
        hidden=_cache_key_hidden(),
        error_hints={
            "PieceError": Hint(
                "minijit refused your key: it is not hashable, or it gave a call the key of "
                "a program traced for other arguments (the message lists what differs: "
                "that part must be in the key)."),
        },
    ),    Exercise(
        id="ex04_jit_call", points=3, title="minijit's call path, jit_call",
        chapter="04_jit_and_the_cache", section="6. Ahead of time: `trace`, `lower`, `compile`",
        hint=Hint(
            pitfall=("Look the call up by its key, and on a miss only trace, lower, compile "
                     "and store it under that same key: an entry never stored, or stored "
                     "under another key, makes every call trace again, and so does tracing "
                     "before the lookup. Return the function's result: execute gives the "
                     "outputs flat, as NumPy arrays."),
            code=("call = f.split(args, kwargs); key = f.key(call); entry = f.lookup(key); "
                  "if it is None: compiled = f.trace_call(call).lower().compile() and "
                  "entry = f.store(key, compiled); then return "
                  "entry.wrap_outputs(f.execute(entry, call)).")),
        probe=probe_jit_call, reference=_reference_jit_call,
        public=(*_jit_call_cases(_JIT_CALL_PUBLIC), switch_in_case("ex04_jit_call")),
        hidden=_jit_call_hidden(),
        error_hints={
            "PieceError": Hint(
                "minijit refused what your jit_call did (the message says what): it returned "
                "plain NumPy arrays (the entry's wrap_outputs makes the function's result of "
                "them), ran an entry traced for other arguments (look each call up by its "
                "key from f.key), or raised."),
            "TypeError": Hint(
                "f.store(key, compiled) takes what f.trace_call(call).lower().compile() "
                "returns, and f.execute(entry, call) the entry f.lookup or f.store gave you."),
        },
    ),
]
