"""The case model: exercises, test cases, and how a result is compared with the expected one.

An :class:`Exercise` names what the learner must define, what it is worth, where in the
course to reread, and two lists of :class:`Case`: public ones (``check()`` shows them) and
hidden ones (only the grader runs them; feedback counts the failed ones by *category*, a
short phrase such as "a loop body" (:func:`category_of`), never their inputs or values).

Hints come in three tiers, shown one after another (see :mod:`minijit.grading.checking`):
the *section* of the chapter to reread (from ``Exercise.section``), the *pitfall* (what
usually goes wrong, in words), and the *code* hint (an API call or a shape of the fix, never
the solution: ``Hint.code``); their text is shown in the course's language
(:mod:`minijit.grading.messages`). The pitfall is chosen by the failure: the raised error's entry
in ``error_hints``, the case's own hint, the exercise's ``case_hints`` entry for the case's
name or category, and only then the exercise's general ``hint``. A plain string where a
:class:`Hint` is expected is the pitfall.

A case is a probe (see :mod:`minijit.grading.probing`) plus JSON-able arguments. Its
expected value is the same probe run against the exercise's *reference* namespace in a
trusted process, or a literal stored on the case. :func:`compare`
(:mod:`minijit.grading.comparing`) then decides, on plain data only, so nothing the
learner's code returns can take part in the decision: an object whose ``==`` is always true
never reaches it (the probe refuses to serialise it).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# compare and describe are used with the case model everywhere (checking, scoring, feedback)
from .comparing import compare, describe, error_of  # noqa: F401
from .messages import language, tr, translate

Probe = Callable[..., Any]

_MISSING: Any = object()

# The hint tiers, in the order a learner sees them.
SECTION, PITFALL, CODE = "section", "pitfall", "code"
HINT_TIERS = (SECTION, PITFALL, CODE)

# What a probe reports when the learner has not attempted the exercise yet: the stub's
# own NotImplementedError (also when another error wraps it: its message is STUB_MESSAGE,
# written by minijit.grading.notebook), or a name that was never defined (the cell did not
# run; the message is the one ``probing.get`` writes).
STUB_MESSAGE = "replace this line with your solution"
_NOT_DEFINED = "run the exercise cell"


@dataclass(frozen=True)
class Hint:
    """The pitfall (in words) and, optionally, a code-level hint shown only later."""

    pitfall: str
    code: str | None = None


def as_hint(value: str | Hint | None) -> Hint | None:
    """A plain string is the pitfall tier; ``None`` stays ``None``."""
    if value is None or isinstance(value, Hint):
        return value
    return Hint(str(value))


def not_attempted(got: Any) -> bool:
    """True when a probe result says the exercise was not attempted: the stub's
    ``NotImplementedError``, or the names it must define are undefined."""
    err = error_of(got)
    if err is None:
        return False
    if err.get("type") == "NotImplementedError" or STUB_MESSAGE in err.get("message", ""):
        return True
    return err.get("type") == "NameError" and _NOT_DEFINED in err.get("message", "")


def not_own(found: Any) -> str | None:
    """The finding of a build exercise's own-work probe
    (:func:`minijit.grading.build_pieces.own_work_case`) as the reason every case fails: its
    text, or None when it found nothing or could not look (an error record: the cases then
    say what is wrong)."""
    return found[:500] if type(found) is str and found else None


@dataclass(frozen=True)
class Case:
    """One test case: ``probe(ns, *args)`` run on the learner's and the reference namespace.

    ``probe`` defaults to the exercise's probe. ``expected`` may be given literally (plain
    data); otherwise it is computed from the reference. ``hint`` (a string or a
    :class:`Hint`) overrides the exercise's. ``category`` is what the case tests, in a few
    words that give away no input or value (the feedback names it when the case is hidden);
    without one it is derived from the name (:func:`category_of`).
    """

    name: str
    args: tuple = ()
    probe: Probe | None = None
    expected: Any = _MISSING
    hint: str | Hint | None = None
    rtol: float = 1e-7
    atol: float = 1e-12
    category: str | None = None

    @property
    def has_literal_expected(self) -> bool:
        return self.expected is not _MISSING


@dataclass(frozen=True)
class Exercise:
    """An exercise of the course, as the grader and ``check()`` see it.

    ``reference`` returns the namespace of a correct solution (the names the learner must
    define); it is only ever called in a trusted process. ``error_hints`` maps the name of
    an exception class raised by the learner's code to the hint for that pitfall (a string,
    or a :class:`Hint` with its own code tier). ``case_hints`` maps a case's name or category
    to the hint for what that case tests. ``hint`` is a :class:`Hint` or a string (the
    pitfall tier only), the fallback for a failure nothing more specific names; ``section``
    is the first tier, a heading of the chapter.
    """

    id: str
    points: float
    title: str
    chapter: str
    section: str
    hint: str | Hint
    probe: Probe
    reference: Callable[[], Mapping[str, Any]]
    public: tuple[Case, ...]
    hidden: tuple[Case, ...] = ()
    error_hints: Mapping[str, str | Hint] = field(default_factory=dict)
    case_hints: Mapping[str, str | Hint] = field(default_factory=dict)

    def cases(self, extra_hidden: tuple[Case, ...] = ()) -> list[tuple[str, Case, bool]]:
        """All cases as ``(key, case, is_public)``; keys are stable and unique."""
        out = [(f"{self.id}/public/{i}", c, True) for i, c in enumerate(self.public)]
        out += [(f"{self.id}/hidden/{i}", c, False) for i, c in enumerate(self.hidden)]
        out += [(f"{self.id}/private/{i}", c, False) for i, c in enumerate(extra_hidden)]
        return out

    def probe_for(self, case: Case) -> Probe:
        return case.probe or self.probe

    def hint_tiers(self, case: Case, got: Any = None, specific: bool = True
                   ) -> dict[str, str]:
        """Every tier of the hint for a failed case, as ``{tier: text}`` in tier order.

        The pitfall is the raised error's entry in ``error_hints`` first, then the case's
        hint, then ``case_hints`` for the case's name, then for its category, then the
        exercise's hint; the code tier comes from the same place, or else from the next of
        them that has one (absent when none has). ``specific``: whether the failure is the
        case's own, some other case having passed; when every case failed, what went wrong
        is no one case's category, and ``case_hints`` are passed over.
        """
        err = error_of(got)
        raised = err.get("type") if err is not None else None
        keyed = ([as_hint(self.case_hints.get(case.name)),
                  self.category_hint(category_of(case))] if specific else [])
        found = [as_hint(self.error_hints.get(raised)) if raised else None,
                 as_hint(case.hint), *keyed, as_hint(self.hint)]
        found = [h for h in found if h is not None]
        lang = language()
        tiers = {SECTION: tr("chapters/{chapter}.ipynb, section \u201c{section}\u201d", lang,
                             chapter=self.chapter, section=translate(self.section, lang)),
                 PITFALL: translate(found[0].pitfall, lang)}
        code = next((h.code for h in found if h.code), None)
        if code:
            tiers[CODE] = translate(code, lang)
        return tiers

    def category_hint(self, category: str) -> Hint | None:
        """The exercise's hint for the cases of ``category`` (``case_hints``), if any: what
        the feedback may say about a failed hidden case, which it names by category only."""
        return as_hint(self.case_hints.get(category))

    def hint_for(self, case: Case, got: Any = None, tier: str = PITFALL,
                 specific: bool = True) -> str:
        """The hint for a failed case in one line, up to ``tier`` (the gradebook's form).

        ``section``: where to reread only; ``pitfall`` (the default): the pitfall, then
        where to reread; ``code``: the pitfall, the code hint, then where to reread.
        ``specific`` as for :meth:`hint_tiers`.
        """
        tiers = self.hint_tiers(case, got, specific)
        reread = tr("Reread {section}.", section=tiers[SECTION])
        if tier == SECTION:
            return reread
        parts = [tiers[PITFALL]]
        if tier == CODE and CODE in tiers:
            parts.append(tiers[CODE])
        return " ".join(parts + [reread])


# What each program of minijit.grading.programs tests, for the cases named "program NAME".
PROGRAM_CATEGORIES = {
    "add_literal": "a literal", "mul_two_args": "elementwise arithmetic",
    "sin_cos": "elementwise arithmetic", "exp_log": "elementwise arithmetic",
    "scale_shift": "a captured constant", "two_outputs": "several outputs",
    "output_is_input": "an input returned as an output", "int_arith": "integers",
    "compare": "a comparison", "sum_axes": "a reduction", "sum_all": "a reduction",
    "max_and_argmax": "a reduction", "mean": "a reduction", "softmax": "a reduction",
    "astype": "a dtype conversion", "reshape_transpose": "a shape change",
    "concat": "a shape change", "slice_index": "indexing", "traced_index": "indexing",
    "at_set": "indexing", "iota": "an array made from nothing (iota)", "where": "a select",
    "dot": "a dot product", "long_chain": "a long program", "cond": "a cond or switch",
    "switch": "a cond or switch", "while_loop": "a loop body", "fori_loop": "a loop body",
    "fori_traced_bound": "a loop body", "scan": "a loop body", "cond_in_loop": "a loop body",
    "unread_output": "an unread output", "nested_jit": "a nested jit",
    "cond_captures_array": "values a body captures",
    "cond_captures_tracers": "values a body captures",
    "switch_captures": "values a body captures", "while_captures": "values a body captures",
    "scan_captures": "values a body captures",
    "cond_in_while": "values captured from two bodies out",
    "nested_loops": "values captured from two bodies out",
}
# Text that states an input or a value: a number standing alone (not int32, 2-d or rank 3),
# a bracket, a quote (not an apostrophe) or an operator. A name with one gives no category.
_STATES_VALUES = re.compile(r"[\[\]{}=*/+<>\"`]|(?<!\w)'|'(?!\w)"
                            r"|(?<![\w.-])(?<!rank )[-+]?\d[\d,.]*(?![\w-])")
OTHER_CATEGORY = "other inputs"


def category_of(case: Case) -> str:
    """What ``case`` tests, in a few words that state no input or value: its ``category``,
    else the category of the program it runs (``program NAME``, :data:`PROGRAM_CATEGORIES`),
    else the heading its name starts with, up to a colon, if that states no value
    (``"elapsed: near the largest int32"`` is ``"elapsed"``), else :data:`OTHER_CATEGORY`.
    Never a whole name: a hidden case's name is not shown."""
    if case.category:
        return case.category
    program = re.match(r"program (\w+)", case.name)
    if program and program[1] in PROGRAM_CATEGORIES:
        return PROGRAM_CATEGORIES[program[1]]
    head = re.sub(r"\s*\([^()]*\)", "", case.name)
    if ": " in head:
        head = head.split(": ", 1)[0].strip()
        if head and len(head) <= 72 and not _STATES_VALUES.search(head):
            return head
    return OTHER_CATEGORY


def count_categories(cases: Iterable[Case]) -> str:
    """``"a loop body (2), several outputs (1)"``: the failed cases' categories, each with
    how many failed, in the order the cases come."""
    counts: dict[str, int] = {}
    for case in cases:
        counts[category_of(case)] = counts.get(category_of(case), 0) + 1
    return ", ".join(f"{translate(c)} ({n})" for c, n in counts.items())


def raises(error_type: str) -> dict:
    """A literal expected value for a case whose point is that the code raises."""
    return {"__error__": {"type": error_type, "message": "", "line": ""}}


def program_cases(names: Iterable[str], seed: int = 0,
                  probe: Probe | None = None) -> tuple[Case, ...]:
    """One case per named program of :mod:`minijit.grading.programs`, in order: the probe
    gets ``(name, seed)`` and makes the program's arguments from the seed."""
    return tuple(Case(f"program {n}" + (f" (seed {seed})" if seed else ""), (n, seed),
                      probe=probe) for n in names)


def source_case(label: str, source: str, *args, hint: str | Hint | None = None) -> Case:
    """A case of the optimizer's exercises: the probe runs ``source`` (it defines ``f``) and
    traces ``f`` on ``args``, each a (values, dtype) pair with JSON-like values
    (:func:`minijit.grading.optimizer_probes.traced`)."""
    return Case(label, (source, [list(a) for a in args]), hint=hint)


def program_hidden(names: Iterable[str], public: Sequence[str],
                   probe: Probe | None = None) -> tuple[Case, ...]:
    """The hidden cases of an exercise graded on programs: every one of ``names`` that is
    not public, then the public ones again on other arguments (seed 1), so that an answer
    fitted to the public arguments fails."""
    return (program_cases([n for n in names if n not in public], probe=probe)
            + program_cases(public, seed=1, probe=probe))


def probe_source(probe: Probe) -> tuple[str, str]:
    """``(source, name)`` of a probe, to be executed inside the grading kernel.

    Probes must be plain top-level functions without decorators: the kernel rebuilds them
    from this text alone.
    """
    if not inspect.isfunction(probe) or probe.__qualname__ != probe.__name__:
        raise TypeError(f"probe {probe!r} must be a top-level function")
    source = textwrap.dedent(inspect.getsource(probe))
    if source.lstrip().startswith("@"):
        raise TypeError(f"probe {probe.__name__} must not be decorated")
    return source, probe.__name__
