"""Import cycles in a graph of modules (module -> the modules it imports), for the layout
tests of minijit's core (tests/test_layers.py) and of its grader (tests/test_grading_layout.py).
"""

from __future__ import annotations


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of more than one module that all reach each other (Tarjan's algorithm),
    in a deterministic order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def one_cycle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A cycle through ``group`` (one of :func:`strongly_connected`'s), as
    ``[a, b, ..., a]``: walk inside the group until a module repeats."""
    start = min(group)
    path, seen = [start], {start}
    while True:
        nxt = min(w for w in graph[path[-1]] if w in group)
        if nxt in seen:
            return path[path.index(nxt):] + [nxt]
        path.append(nxt)
        seen.add(nxt)
