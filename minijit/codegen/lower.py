"""Lowering an optimized Jaxpr to the Python source of one Numba function (chapter 09).

The whole program becomes a single function `entry(consts..., args...)`, so Numba compiles
one entry point per traced function. Every block of the source starts with a comment holding
the IR equation it came from, and variables keep the names the printer gives them, so the
source reads side by side with `make_jaxpr`'s output.

Values inside the function: rank-0 values are Numba scalars; arrays are C-contiguous NumPy
arrays. The generated code writes only memory that `plan_buffers` says this function owns:
arrays it allocated, the caller's preallocated outputs and donated arguments, and among those
only ones no live value (a view, a returned value) can still see; a rule that updates an array
copies it first, and a loop's next carries never share memory (`assign_outputs`).
Control flow becomes native `if` / `while` / `for`; `debug_callback` calls back into Python
through `numba.objmode`.
"""

from __future__ import annotations

import keyword
from contextlib import contextmanager
from dataclasses import dataclass, field

from minijit import primitives as P
from minijit import threads
from minijit.codegen import array_rules, control_rules  # noqa: F401 - they fill numba_rules
from minijit.codegen.array_rules import empty_like_var
from minijit.codegen.control_rules import interchangeable  # noqa: F401
from minijit.codegen.in_place import TAKES_AN_ARRAY, written_in_place
from minijit.codegen.kernels import emit_kernel, is_loop_kernel
from minijit.codegen.row_loops import emit_run, row_runs
from minijit.codegen.rules import (
    Expression,
    Indexed,
    Statements,
    numba_rules,
)
from minijit.codegen.scalar_rules import cast, literal, scalar_expr
from minijit.core import ELEMENTWISE, ShapedArray
from minijit.ir import (
    ClosedJaxpr,
    Eqn,
    Jaxpr,
    Lit,
    Var,
    VarNames,
    name_like_the_printer,
    pp_eqn,
    subjaxprs,
)
from minijit.passes.fuse_elementwise import as_kernel, fused_p
from minijit.passes.plan_buffers import outputs_to_copy, owns_its_memory, plan_buffers

_RESERVED = {"np", "nb", "numba", "math", "entry", "range", "abs", "min", "max", "len",
             "vecmath", "c_view", "folds"}


class CodegenError(RuntimeError):
    """A program or primitive the Numba backend cannot compile."""


@dataclass
class Source:
    """Generated source plus what the compiler needs alongside it."""

    text: str
    callbacks: dict[str, object] = field(default_factory=dict)  # global name -> callable
    # source line -> its IR equation, or a function that describes it (only an error needs it)
    line_eqns: dict[int, object] = field(default_factory=dict)
    out_avals: list = field(default_factory=list)  # buffers the caller allocates and passes
    # None: the entry returns every output. Else, per output, where it is: ("returned", j),
    # the entry's j-th result, ("buffer", b), buffer b, or ("stacked", b, k), row k of
    # buffer b (see `_stackable`).
    out_layout: list | None = None
    threaded: bool = False  # some loop runs on Numba's threads (`numba.prange`)


# Numba's threads for the `prange` loops only: its other conversions would thread what minijit
# did not choose to (`np.dot` became parallel loops, with other roundings than BLAS's)
PRANGE_ONLY = ("{'prange': True, 'numpy': False, 'reduction': False, 'setitem': False, "
               "'comprehension': False, 'inplace_binop': False, 'stencil': False, "
               "'fusion': False}")
_HOIST = "# (allocations hoisted before this loop)"  # a mark in `lines`, by identity


def _describe(eqn: Eqn, names) -> str:
    """The equation on one line; a fused kernel or control flow is summarised (without
    printing it first: a kernel of 5,000 equations took half a second to print)."""
    if not subjaxprs(eqn):
        text = pp_eqn(eqn, names)
        if "\n" not in text:
            return text
    outs = " ".join(f"{names(v)}:{v.aval.str_short()}" for v in eqn.outvars)
    ins = " ".join(names(a) if isinstance(a, Var) else str(a.val) for a in eqn.invars)
    extra = f"[kind={eqn.params['kind']}]" if "kind" in eqn.params else "[...]"
    return f"{outs} = {eqn.primitive.name}{extra} {ins}"


class Lowering:
    # kernels of this many elements or more use threads: below it, starting them costs more
    # than they save
    PARALLEL_AT = 1 << 16

    def __init__(self, parallel: bool = False):
        # whether large kernels run their outer loop on Numba's threads (threads.wanted)
        self.parallel = parallel
        self.in_row_run = False  # while a row loop's kernels are lowered: they thread it whole
        self.threaded = False  # whether any loop got `numba.prange` (the decorator says so)
        self.lines: list[str] = []
        # (index of a loop's mark in `lines`, its indent) for each loop being written, and
        # mark index -> the (line, description) pairs hoisted there (`loop`, `hoist`)
        self._hoist_points: list[tuple[int, int]] = []
        self._hoisted: dict[int, list[tuple[str, object]]] = {}
        self.indent = 1
        self.names = VarNames()
        self.safe: dict[int, str] = {}
        self.callbacks: dict[str, object] = {}
        # outer name of an output -> the entry parameter holding its preallocated buffer
        self.prealloc: dict[str, str] = {}
        # outer name of an output -> (buffer parameter, row): many outputs of one shape are
        # rows of one buffer (`_stackable`)
        self.stacked: dict[str, tuple[str, int]] = {}
        # outer name of a kernel output -> (the bigger array's name, the statement allocating
        # that, the rows it fills): the kernel writes there, not into an array of its own
        self.into: dict[str, tuple[str, str, str]] = {}
        self.allocated: set[str] = set()  # bigger arrays allocated ahead, by such a kernel
        self._in_place: dict[int, tuple] = {}  # id(jaxpr) -> (jaxpr, `in_place`)
        self.imports: set[str] = set()  # import lines that rules need in the module
        # module-level constant arrays, `_T0 = np.array([...])`: the literals of a rolled
        # run of outputs (reroll.emit_output_loop)
        self.tables: list[str] = []
        self.read: set[int] = set()  # ids of the Vars some equation or output reads
        # outer name of an output -> the array it writes into: a dead one (plan_buffers), or
        # a loop carry's spare (in_place.spare_carries), free for the whole iteration
        self.reuse: dict[str, str] = {}
        self.line_eqns: dict[int, str] = {}
        self.current_eqn = ""
        self.fun_name = "f"
        # size -> the expression that reads it from an argument's shape (`shape_generic`)
        self.dims: dict[int, str] = {}
        # id(Var) -> the scalar a `broadcast_in_dim` fills it with, where only interchanged
        # loops read it, as their initial state: they read the scalar, and it is never built
        self.fills: dict[int, object] = {}
        # id(Var) -> the boolean it converts to a `cond`'s int32 index, where only that cond
        # reads it: the cond tests the boolean (`if not p:`), and the index is never built
        self.predicates: dict[int, Var] = {}

    def threads_for(self, size: int) -> bool:
        """Does a loop over `size` elements written now get threads? Only at the function's
        top level: a loop inside a control-flow body runs once per iteration."""
        return (self.parallel and self.indent == 1 and not self.in_row_run
                and size >= self.PARALLEL_AT and threads.available())

    # -- writing
    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)
        self.line_eqns[len(self.lines) + 1] = self.current_eqn  # +1: the `def` line

    @contextmanager
    def loop(self):
        """Around the lines of a loop (`while True:`, `for ...:` and its body): a scratch
        array the body needs, of a shape the loop cannot change, is allocated once, before
        the outermost such loop (`hoist`), not in every iteration (a Jacobi sweep's scratch
        row was a quarter of its time). The lines go in when the source is assembled
        (`_with_hoisted`), so indices into `lines` stay valid while the body is written."""
        self.lines.append(_HOIST)
        self._hoist_points.append((len(self.lines) - 1, self.indent))
        try:
            yield
        finally:
            self._hoist_points.pop()

    def hoist(self, text: str) -> bool:
        """Allocate a scratch array before the outermost loop being written; False outside a
        loop (the caller writes the line where it is). Only for arrays whose contents do not
        outlive one use: the one array serves every iteration."""
        if not self._hoist_points:
            return False
        at, indent = self._hoist_points[0]
        self._hoisted.setdefault(at, []).append(("    " * indent + text, self.current_eqn))
        return True

    def _with_hoisted(self) -> tuple[list[str], dict[int, object]]:
        """`lines` and `line_eqns` with each loop's hoisted allocations in place of its mark."""
        lines, line_eqns = [], {}
        for k, text in enumerate(self.lines):
            if text is _HOIST:
                for hoisted, description in self._hoisted.get(k, ()):
                    lines.append(hoisted)
                    line_eqns[len(lines) + 1] = description
                continue
            lines.append(text)
            if k + 2 in self.line_eqns:
                line_eqns[len(lines) + 1] = self.line_eqns[k + 2]
        return lines, line_eqns

    def name(self, v: Var) -> str:
        if id(v) not in self.safe:
            n = self.names(v)
            self.safe[id(v)] = n + "_" if keyword.iskeyword(n) or n in _RESERVED else n
        return self.safe[id(v)]

    def atom(self, a) -> str:
        return literal(a.val, a.aval.dtype) if isinstance(a, Lit) else self.name(a)

    def dim(self, n: int) -> str:
        """A size in the generated code: read from an argument's shape where one has it, or
        within 2 of one (`x[1:]` has `_n0 - 1` elements), so that the same program on other
        sizes is the same source (see `shape_generic`)."""
        n = int(n)
        if n in self.dims or n <= 1:
            return self.dims.get(n, str(n))
        for c in (1, 2):
            if n + c in self.dims:
                return f"({self.dims[n + c]} - {c})"
            if n - c in self.dims:
                return f"({self.dims[n - c]} + {c})"
        return str(n)

    def shape(self, shape) -> str:
        """A shape tuple in the generated code, each size written by `dim`."""
        sizes = [self.dim(d) for d in shape]
        return f"({sizes[0]},)" if len(sizes) == 1 else f"({', '.join(sizes)})"

    def shape_generic(self, params: list[str], avals: list) -> None:
        """Bind each size of the entry's array parameters to a name read from its shape.

        `_n0 = x.shape[0]` for the first parameter and axis of each size, other than 0 and
        1, which stay literals: they decide broadcasting and empty loops, so two programs
        that differ there are different programs. A size within 2 of a named one is written
        from it; the structural rules also write a padded axis as its operand's size plus
        the padding and a flattened axis as a product of two names (`array_rules._size`).
        Any other computed size stays a literal.
        Every rule writes sizes through `dim`, so a program traced again for other sizes
        (same ranks, dtypes and pattern of 0s, 1s and equal sizes) generates the same source
        and shares its compile (`compile.py` keys compiles by the source without its
        comments, which name shapes).

        Sound by construction: a size is written as a name only where, for the shapes this
        source is generated for, the name holds that size, so any source is correct for the
        arguments it was generated for; two shapes that generate the same source are both
        served correctly by one compile of it."""
        for param, aval in zip(params, avals):
            for k, d in enumerate(aval.shape):
                if d > 1 and d not in self.dims:
                    self.dims[d] = f"_n{len(self.dims)}"
                    self.line(f"{self.dims[d]} = {param}.shape[{k}]")

    # -- programs
    def lower(self, closed: ClosedJaxpr, fun_name: str, donated: tuple = ()) -> Source:
        self.fun_name = fun_name
        jaxpr = closed.jaxpr
        name_like_the_printer(jaxpr, self.names)  # before plan_reuse names anything
        params = [self.name(v) for v in (*jaxpr.constvars, *jaxpr.invars)]
        self.check_rules(jaxpr)
        preallocated = _preallocatable_outputs(jaxpr)
        stacks = _stackable(jaxpr, preallocated)
        stacked = {id(v) for group in stacks for v in group}
        singles = [v for v in preallocated if id(v) not in stacked]
        for k, v in enumerate(singles):
            self.prealloc[self.name(v)] = f"out{k}"
            params.append(f"out{k}")
        buffers = [v.aval for v in singles]
        buffer_of = {id(v): k for k, v in enumerate(singles)}  # id(output) -> its buffer
        row_of: dict[int, tuple[int, int]] = {}  # id(output) -> (its buffer's index, its row)
        for g, group in enumerate(stacks):
            for k, v in enumerate(group):
                self.stacked[self.name(v)] = (f"outs{g}", k)
                row_of[id(v)] = (len(buffers), k)
            params.append(f"outs{g}")
            buffers.append(ShapedArray((len(group), *group[0].aval.shape), group[0].aval.dtype))
        self.plan_reuse(jaxpr, donated)
        avals = [v.aval for v in (*jaxpr.constvars, *jaxpr.invars)] + buffers
        self.shape_generic(params, avals)
        self.jaxpr_body(jaxpr)
        # An output in a buffer the caller allocated (its own, or a row of a stacked one) is
        # not returned: the caller holds it, and Numba's boxing of a returned array is half
        # of a small call (0.20-0.25 of 0.40-0.46 us).
        layout = []  # per output: ("returned", position), ("buffer", b), ("stacked", b, row)
        outs = []
        for a in jaxpr.outvars:
            if id(a) in row_of:
                layout.append(("stacked", *row_of[id(a)]))
            elif id(a) in buffer_of:
                layout.append(("buffer", buffer_of[id(a)]))
            else:
                layout.append(("returned", len(outs)))
                outs.append(self.atom(a))
        self.line("return" if not outs and (singles or stacks) else
                  f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        # The function's name is not in the source: identical programs share one compile.
        head = ["# minijit: generated code; each block names the IR equation it computes.",
                "import math", "import numba", "import numpy as np",
                "from minijit.codegen import alloc", "from minijit.codegen import vecmath",
                *sorted(self.imports), *self.tables,
                "", "",
                # no C-callable twin (`cfunc` wrapper): only Python calls it (~10% of a
                # small program's compile)
                "@numba.njit(error_model='numpy', no_cfunc_wrapper=True, cache=True"
                + (f", parallel={PRANGE_ONLY})" if self.threaded else ")"),
                f"def entry({', '.join(params)}):"]
        shift = len(head) - 1
        lines, line_eqns = self._with_hoisted()
        line_eqns = {k + shift: e for k, e in line_eqns.items()}
        return Source("\n".join(head + lines) + "\n", self.callbacks, line_eqns,
                      buffers, layout if stacks or singles else None, self.threaded)

    def plan_reuse(self, jaxpr: Jaxpr, donated: tuple) -> None:
        """Follow `plan_buffers`: the output of a loop kernel, a concatenation, a pad or an
        update may take over the array of a value that died (or of a donated argument, or the
        update's own operand), instead of allocating. `self.reuse` then says, for each name,
        the array it is written into; no other equation's output has an entry.

        Only an array that owns its memory is handed over (`owns_its_memory`: not a view, not
        control flow's result, which may be an operand), so no input, constant or live value
        can see the write; shapes and dtypes must match too (the plan matches bytes). A
        bigger array that a kernel writes into (in_place.py) is allocated before that kernel,
        where the plan's array may still be alive: it takes none.

        The plan orders whole equations; codegen then runs some of them as one loop over the
        rows (row_loops.py), where a value is dead in iteration i0 only once that iteration
        has read it. The rule that keeps a taken array safe there: it is written only in the
        iterations of the loop, row i0 in iteration i0 after every read of that row (no
        statement hoisted before the loop writes into it), and no later read in the same loop
        sees another row of it (reads of the run's arrays are row-local, `_Run.take`)."""
        plan = plan_buffers(jaxpr, tuple(donated) + (False,) * (len(jaxpr.invars) - len(donated)))
        kernel_made = {id(o) for e in jaxpr.eqns if is_loop_kernel(e.primitive) for o in e.outvars}
        into = self.in_place(jaxpr)
        early = {id(e.outvars[0]) for e, _ in into.values()}
        takes = kernel_made | {id(e.outvars[0]) for e in jaxpr.eqns
                               if e.primitive in TAKES_AN_ARRAY and id(e.outvars[0]) not in early}
        owner: dict[int, Var] = {}  # buffer -> the last value that held it
        for b, k in plan.reused_from_input.items():  # donated arguments' arrays
            owner[b] = jaxpr.invars[k]
        for v in (o for e in jaxpr.eqns for o in e.outvars):
            b = plan.buffer_of.get(id(v))
            if b is None or v in into:  # a view of a bigger array (in_place.py): it
                continue                    # neither gives nor takes a buffer
            prev = owner.get(b)
            if (id(v) in takes and prev is not None and prev.aval.shape == v.aval.shape
                    and prev.aval.dtype == v.aval.dtype and owns_its_memory(plan.roots, prev)):
                name, prev_name = self.name(v), self.name(prev)
                if name in self.stacked:
                    pass  # written straight into its row of the caller's buffer
                elif name not in self.prealloc:
                    self.reuse[name] = prev_name
                elif id(prev) in kernel_made and prev_name not in self.reuse and (
                        prev_name not in self.prealloc):
                    # An output computed in place from a dead temporary (softmax's last
                    # division): the temporary is written into the caller's buffer instead.
                    self.prealloc[prev_name] = self.prealloc.pop(name)
                    self.reuse[name] = prev_name
            owner[b] = v

    def check_rules(self, jaxpr: Jaxpr) -> None:
        """Every equation, in kernels and loop bodies too, needs an entry in `numba_rules`:
        say which one is missing before writing any code, rather than fail half-way."""
        for eqn in jaxpr.eqns:
            if eqn.primitive not in numba_rules:
                kind = "an Expression" if eqn.primitive in ELEMENTWISE else "a"
                raise CodegenError(
                    f"the Numba backend has no rule for primitive `{eqn.primitive.name}` "
                    f"(in `{self.describe(eqn)}`): add {kind} rule to "
                    "minijit.codegen.rules.numba_rules (chapter 09), or run this function "
                    f"with jit({self.fun_name}, backend='interpreter')")
            for sub in subjaxprs(eqn):
                self.check_rules(sub)

    def describe(self, eqn: Eqn) -> str:
        return _describe(eqn, self.names)

    def in_place(self, jaxpr: Jaxpr) -> dict:
        """`written_in_place(jaxpr)` (in_place.py), found once per Jaxpr: `plan_reuse` and
        `jaxpr_body` both need it."""
        if id(jaxpr) not in self._in_place:
            self._in_place[id(jaxpr)] = (jaxpr, written_in_place(jaxpr))
        return self._in_place[id(jaxpr)][1]

    def jaxpr_body(self, jaxpr: Jaxpr) -> None:
        # values something reads later (an equation, or the program's outputs): a rule may
        # skip writing one that nothing reads (an interchanged loop's unused carries)
        self.read.update(id(a) for e in jaxpr.eqns for a in e.invars if isinstance(a, Var))
        self.read.update(id(a) for a in jaxpr.outvars if isinstance(a, Var))
        for v, (bigger, offset) in self.in_place(jaxpr).items():
            z = bigger.outvars[0]
            sub = f"{self.dim(offset)}:{self.dim(offset + v.aval.shape[0])}"
            # plan_reuse gives such an array no dead one: an entry is a loop carry's spare
            allocate = self.reuse.get(self.name(z)) or empty_like_var(self, z)
            self.into[self.name(v)] = (self.name(z), allocate, sub)
        readers = _readers(jaxpr)
        self.fills.update(_scalar_fills(jaxpr, readers))
        self.predicates.update(_branch_predicates(jaxpr, readers))
        runs = row_runs(jaxpr, self)
        k = 0
        while k < len(jaxpr.eqns):
            if k in runs:  # one loop over the rows computes these equations (row_loops.py)
                emit_run(self, jaxpr.eqns[k:runs[k]])
                k = runs[k]
                continue
            self.describe_and_lower(jaxpr.eqns[k])
            k += 1

    def describe_and_lower(self, eqn: Eqn) -> None:
        self.current_eqn = _describe(eqn, self.names)
        self.line(f"# {self.current_eqn}")
        if eqn.outvars and id(eqn.outvars[0]) in self.fills:
            self.line("# (not built: the loop below starts from the scalar)")
            return
        if eqn.outvars and id(eqn.outvars[0]) in self.predicates:
            self.line("# (not built: the cond below tests the boolean)")
            return
        self.eqn(eqn)

    def bind_inputs(self, jaxpr: Jaxpr, exprs: list[str]) -> None:
        for v, e in zip(jaxpr.invars, exprs):
            self.line(f"{self.name(v)} = {e}")

    def assign_outputs(self, jaxpr: Jaxpr, targets: list[str], carries=None,
                       also=()) -> None:
        """`t1, t2 = o1, o2` for the first `len(targets)` outputs (simultaneous, so a carry
        can feed another), typed exactly, and the (target, value) pairs `also` with them.

        For a loop body, `carries` are its carry inputs: the next iteration may write any
        carry in place (`plan_reuse` treats them as donated), so each next carry must own
        distinct memory; one that may share it with a constant or another carry is copied."""
        if not targets:
            return
        copies = (outputs_to_copy(jaxpr, carries) if carries is not None
                  else [False] * len(targets))
        values = [cast(self.atom(a), a.aval.dtype) if not a.aval.shape
                  else f"alloc.copy({self.atom(a)})" if copy else self.atom(a)
                  for a, copy in zip(jaxpr.outvars[:len(targets)], copies)]
        targets = [*targets, *(t for t, _ in also)]
        values = [*values, *(v for _, v in also)]
        self.line(f"{', '.join(targets)} = {', '.join(values)}")

    # -- equations
    def eqn(self, eqn: Eqn) -> None:
        p = eqn.primitive
        outs = [self.name(v) for v in eqn.outvars]
        args = [self.atom(a) for a in eqn.invars]
        rule = numba_rules[p]  # read now, so a rule added at run time is used (check_rules)
        scalar = not eqn.outvars or not eqn.outvars[0].aval.shape
        if isinstance(rule, Statements):
            rule.rule(self, eqn, args, outs)
        elif scalar and isinstance(rule, Expression):
            self.line(f"{outs[0]} = {scalar_expr(eqn, args)}")
        elif scalar and isinstance(rule, Indexed):
            self.line(f"{outs[0]} = {rule.rule(args[0], eqn, [])}")
        else:  # a loop kernel of one equation: elementwise, broadcast or reduction
            kernel = as_kernel(eqn)
            emit_kernel(self, kernel.params["jaxpr"], [self.atom(a) for a in kernel.invars],
                        outs, self.name)


def _readers(jaxpr: Jaxpr) -> dict[int, list[tuple[Eqn, int]]]:
    """{id(v): [(equation, operand position), ...]} of every equation that reads v, and
    (None, -1) for each time the jaxpr returns it."""
    readers: dict[int, list[tuple[Eqn | None, int]]] = {}
    for e in jaxpr.eqns:
        for k, a in enumerate(e.invars):
            if isinstance(a, Var):
                readers.setdefault(id(a), []).append((e, k))
    for a in jaxpr.outvars:
        if isinstance(a, Var):
            readers.setdefault(id(a), []).append((None, -1))
    return readers


def _scalar_fills(jaxpr: Jaxpr, readers: dict) -> dict[int, object]:
    """{id(v): scalar} for each `v = broadcast_in_dim(scalar)` (`zeros_like(x)`) that only
    interchanged fori_loops read, and only as initial carries: each element starts from the
    scalar, so the array need not exist (Mandelbrot's zeros: two arrays built and read once
    per call). Not an output, not read by anything else (`readers`: `_readers(jaxpr)`)."""
    fills = {}
    for e in jaxpr.eqns:
        if e.primitive is not P.broadcast_in_dim_p or e.invars[0].aval.shape:
            continue
        uses = readers.get(id(e.outvars[0]), [])
        if uses and all(r is not None and r.primitive.name == "fori_loop"
                        and interchangeable(r) and k >= 2 + r.params["body_nconsts"]
                        for r, k in uses):
            fills[id(e.outvars[0])] = e.invars[0]
    return fills


def _branch_predicates(jaxpr: Jaxpr, readers: dict) -> dict[int, Var]:
    """{id(index): p} for each `index = convert_element_type[int32](p)` of a boolean `p` that
    only a two-branch `cond` reads, as its index (`lax.cond(pred, ...)` stages this). The
    index is 0 or 1 exactly when `p` is False or True, so `if not p:` picks the same branch as
    `if index == 0:`, and Numba types one variable and one call fewer (the conversion and
    the comparison were about 2% of control flow 3 deep's compile). Not an output
    (`readers`: `_readers(jaxpr)`)."""
    found = {}
    for e in jaxpr.eqns:
        if (e.primitive is not P.convert_element_type_p or e.invars[0].aval.dtype.kind != "b"
                or e.invars[0].aval.shape):
            continue
        uses = readers.get(id(e.outvars[0]), [])
        if (len(uses) == 1 and uses[0][0] is not None and uses[0][1] == 0
                and uses[0][0].primitive.name == "cond"
                and len(uses[0][0].params["branches"]) == 2):
            found[id(e.outvars[0])] = e.invars[0]
    return found


def _preallocatable_outputs(jaxpr: Jaxpr) -> list[Var]:
    """Outputs that a loop kernel writes and that the caller should allocate with NumPy.

    NumPy's allocator asks the kernel for huge pages on large arrays; memory Numba allocates
    inside the compiled function faults in 4 KiB at a time (about 30 ms per 80 MB)."""
    producers = {id(v): e for e in jaxpr.eqns for v in e.outvars}
    seen, out = set(), []
    for a in jaxpr.outvars:
        e = producers.get(id(a)) if isinstance(a, Var) else None
        if e is None or id(a) in seen or not a.aval.shape or not a.aval.size:
            continue
        seen.add(id(a))
        if is_loop_kernel(e.primitive):
            out.append(a)
    return out


STACK_AT = 8  # this many outputs of one shape and dtype or more share one buffer


def _stackable(jaxpr: Jaxpr, preallocated: list[Var]) -> list[list[Var]]:
    """Groups of at least `STACK_AT` outputs of one shape and dtype, each written by an
    elementwise kernel and read by no equation: each group becomes one buffer of shape
    (len(group), *shape) that the caller allocates, each output one of its rows.

    Why: Numba's compile time grows much faster than linearly with the number of arrays a
    function takes and returns (300 outputs, each its own parameter and result: 29 s; the same
    loop writing rows of one buffer: 5.5 s). The rows do not overlap, so the outputs stay
    distinct arrays; each keeps its whole buffer alive, which is why few outputs never stack."""
    producer = {id(v): e for e in jaxpr.eqns for v in e.outvars}
    read = {id(a) for e in jaxpr.eqns for a in e.invars if isinstance(a, Var)}
    groups: dict[tuple, list[Var]] = {}
    for v in preallocated:
        e = producer[id(v)]
        if (e.primitive is fused_p and e.params["kind"] == "elementwise"
                and id(v) not in read):
            groups.setdefault((v.aval.shape, v.aval.dtype), []).append(v)
    return [g for g in groups.values() if len(g) >= STACK_AT]


def lower_jaxpr(closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = (),
                parallel: bool | None = None) -> Source:
    """The Numba source for `closed` (see the module docstring); `parallel` as `jit`'s."""
    return Lowering(threads.wanted(parallel)).lower(closed, fun_name, donated)
