"""XLA's kernels, read from the text of a program `jax.jit` compiled (chapter 10, section 5).

    text = jax.jit(f).lower(*args).compile().as_text()   # XLA's optimized HLO
    for kernel in xla_kernels(text):
        print(kernel)                # kernel 2 writes f64[1000], reads kernel 1: reduce_sum

XLA fuses operations into *fusions*, one loop nest each, as minijit's `fuse_elementwise` makes
`fused` equations. The ENTRY computation of the compiled text lists them in the order they
run; each calls a fused computation whose instructions carry the jaxpr primitive they came
from (`metadata={op_name="jit(f)/exp" ...}`). This only parses text, so it needs no JAX.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMPUTATION = re.compile(r"^(ENTRY )?%(\S+) \(.*\{$")
_FUSION = re.compile(r"%(\S+) = (\S+?)\{[^}]*\} fusion\(([^)]*)\).*?calls=%([\w.\-]+)")
_PRIMITIVE = re.compile(r'op_name="[^"]*/(\w+)"')


@dataclass(frozen=True)
class Kernel:
    """One fusion of a compiled program: what it writes, what it reads, what it computes."""

    name: str  # "kernel 1", "kernel 2", ... in the order the program runs them
    shape: str  # the array it writes, as HLO types it: f64[1000,500]
    reads: tuple[str, ...]  # "kernel k" for another kernel's result, else "an argument"
    primitives: tuple[str, ...]  # the jaxpr primitives fused in it, in order, each once

    def __str__(self) -> str:
        return (f"{self.name} writes {self.shape}, reads {', '.join(self.reads)}: "
                f"{', '.join(self.primitives)}")


def xla_kernels(compiled_text: str) -> list[Kernel]:
    """The fusions of the ENTRY computation of XLA's compiled HLO text, in the order they run."""
    bodies: dict[str, list[str]] = {}
    entry = None
    current: list[str] | None = None
    for line in compiled_text.splitlines():
        head = _COMPUTATION.match(line)
        if head:
            current = bodies.setdefault(head.group(2), [])
            if head.group(1):
                entry = head.group(2)
        elif current is not None:
            current.append(line)
    if entry is None:
        raise ValueError("no ENTRY computation in this text: pass compile().as_text()")
    kernels: list[Kernel] = []
    names: dict[str, str] = {}  # HLO name of a fusion's result -> "kernel k"
    for line in bodies[entry]:
        found = _FUSION.search(line)
        if not found:
            continue
        result, shape, operands, body = found.groups()
        reads = tuple(dict.fromkeys(names.get(o.strip().lstrip("%"), "an argument")
                                    for o in operands.split(",") if o.strip()))
        primitives = tuple(dict.fromkeys(m.group(1) for text in bodies.get(body, ())
                                         if (m := _PRIMITIVE.search(text))))
        names[result] = f"kernel {len(names) + 1}"
        kernels.append(Kernel(names[result], shape, reads, primitives))
    return kernels
