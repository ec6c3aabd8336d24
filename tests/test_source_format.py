"""The source is the formatter's: `ruff format` holds on the whole tree, with no exemptions.

A `fmt: skip` comment lets a hand pack a statement onto one line; a `fmt: off` region lets it
pack many. Both hide structure from a reader, and were once used to keep files under a line
count. SRC-2 (spec/source.md).
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXEMPTION = re.compile(r"#\s*fmt:\s*(skip|off|on)\b")


def exemptions(root: pathlib.Path) -> list[str]:
    """Every line under `root`'s Python packages that exempts itself from the formatter."""
    found = []
    for base in ("kafka_ref", "tests", "labs"):
        for path in sorted((root / base).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if EXEMPTION.search(line):
                    found.append(f"{path.relative_to(root)}:{number}")
    return found


def test_an_exemption_is_found(tmp_path):
    (tmp_path / "kafka_ref").mkdir()
    packed = "a = 1; b = 2  # fmt" + ": skip\n"  # split, so this file is not found itself
    (tmp_path / "kafka_ref" / "packed.py").write_text(packed)
    assert exemptions(tmp_path) == ["kafka_ref/packed.py:1"]


@pytest.mark.spec("SRC-2")
def test_no_line_is_exempt_from_the_formatter():
    found = exemptions(ROOT)
    assert not found, f"lines exempt from ruff format: {found[:10]}"


@pytest.mark.spec("SRC-2")
def test_the_tree_is_formatted():
    ruff = shutil.which("ruff", path=str(pathlib.Path(sys.executable).parent)) or shutil.which(
        "ruff"
    )
    assert ruff, "ruff is a test dependency"
    result = subprocess.run(
        [ruff, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
