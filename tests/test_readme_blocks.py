"""Every Python example in README.md runs, and prints what the README says it prints.

The convention, for whoever edits the README:

- Every ```` ```python ```` block runs on its own, in a fresh interpreter (so with minijit's
  defaults, the Numba backend included), from an empty temporary folder. Blocks indented
  inside a list item count too.
- When the next fenced block after it is a ```` ```text ```` block, with nothing but prose in
  between (say what it shows there: "It prints ..."), that block is what the Python block
  prints: its standard output must match, line by line. Trailing spaces and blank lines at the
  end do not count, and numbers compare within a relative 1e-9, so that a last digit that
  another platform's libm rounds differently does not fail the test.
- A block that cannot run on its own (a fragment) gets the line
  `<!-- readme-test: skip (why) -->` right before it; a test checks the reason is given.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[\w+-]*)[ \t]*$")
SKIP = re.compile(r"^\s*<!--\s*readme-test:\s*skip\s*(?P<why>.*?)\s*-->\s*$")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


@dataclass
class Block:
    info: str
    code: str
    line: int  # where the opening fence is (1-based)
    skip: str | None  # the reason, for a block marked `readme-test: skip`
    expected: str | None = None  # a python block's documented output


def fenced_blocks(text: str) -> list[Block]:
    """The README's fenced blocks in order; a python block gets the text block after it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, start = fence["indent"], i
        end = start + 1
        while end < len(lines) and lines[end].rstrip() != indent + "```":
            end += 1
        code = textwrap.dedent("\n".join(lines[start + 1 : end])) + "\n"
        before = lines[start - 1] if start else ""
        skip = SKIP.match(before)
        block = Block(fence["info"], code, start + 1, skip["why"] if skip else None)
        previous = blocks[-1] if blocks else None
        if block.info == "text" and previous is not None and previous.info == "python":
            previous.expected = code
        blocks.append(block)
        i = end + 1
    return blocks


PYTHON_BLOCKS = [b for b in fenced_blocks(README.read_text()) if b.info == "python"]


def same_output(got: str, expected: str) -> bool:
    got_lines = [line.rstrip() for line in got.rstrip().splitlines()]
    want_lines = [line.rstrip() for line in expected.rstrip().splitlines()]
    if len(got_lines) != len(want_lines):
        return False
    return all(same_line(g, w) for g, w in zip(got_lines, want_lines))


def same_line(got: str, want: str) -> bool:
    if got == want:
        return True
    if NUMBER.sub("#", got) != NUMBER.sub("#", want):
        return False
    for g, w in zip(NUMBER.findall(got), NUMBER.findall(want)):
        a, b = float(g), float(w)
        if abs(a - b) > 1e-9 * max(abs(a), abs(b)):
            return False
    return True


def test_the_readme_has_python_examples_with_their_output():
    assert PYTHON_BLOCKS, "no ```python blocks found in README.md"
    assert any(b.expected is not None for b in PYTHON_BLOCKS)


def test_skipped_blocks_say_why():
    for block in PYTHON_BLOCKS:
        if block.skip is not None:
            assert block.skip.strip("() "), f"README.md:{block.line}: skipped without a reason"


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, id=f"line{b.line}") for b in PYTHON_BLOCKS],
)
def test_readme_python_block(block, tmp_path):
    if block.skip is not None:
        pytest.skip(f"README.md:{block.line}: {block.skip}")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        f"README.md:{block.line}: the example failed:\n{result.stderr[-3000:]}"
    )
    if block.expected is not None:
        assert same_output(result.stdout, block.expected), (
            f"README.md:{block.line}: the example prints\n{result.stdout}\n"
            f"but the README says it prints\n{block.expected}"
        )


def test_the_output_comparison():
    assert same_output("1419.317387167288\n", "1419.3173871672881")
    assert not same_output("1419.3\n", "1419.4")
    assert not same_output("a 1\n", "b 1")
    assert not same_output("x\ny\n", "x")
    assert same_output(
        "{ lambda ; a:f64[3]. let\n  in (a,) }  \n\n", "{ lambda ; a:f64[3]. let\n  in (a,) }"
    )


def test_fenced_blocks_pairs_a_python_block_with_its_output():
    text = "\n".join(
        [
            "```python",
            "print(1)",
            "```",
            "",
            "It prints:",
            "",
            "```text",
            "1",
            "```",
            "<!-- readme-test: skip (a fragment) -->",
            "   ```python",
            "   x",
            "   ```",
            "```bash",
            "ls",
            "```",
            "```text",
            "not an output",
            "```",
        ]
    )
    first, _output, second, bash, text_block = fenced_blocks(text)
    assert first.info == "python" and first.expected == "1\n"
    assert second.info == "python" and second.skip == "(a fragment)" and second.code == "x\n"
    assert second.expected is None
    assert bash.info == "bash" and text_block.info == "text"
