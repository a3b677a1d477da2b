"""The main tests: every fixtures/convert/<case>.in.py converts to <case>.out.py exactly;
converting the output again changes nothing; the output parses; the diagnostics listed in
<case>.diag.txt (one `line:col CODE` per line) are exactly the ones reported."""
from __future__ import annotations

import ast

import pytest

from conftest import FIXTURES
from msmigrate import convert_source

CASES = sorted(FIXTURES.glob("convert/*.in.py"))


@pytest.mark.parametrize("case", CASES, ids=[c.name[:-6] for c in CASES])
def test_fixture(case):
    source = case.read_text()
    expected_path = case.with_name(case.name.replace(".in.py", ".out.py"))
    result = convert_source(source, case.name)
    assert result.code == expected_path.read_text(), f"regenerate with: python tests/regen.py {case.name}"
    ast.parse(result.code)
    again = convert_source(result.code, case.name, force=True)
    assert again.code == result.code, "converting the output again must change nothing"
    diag_path = case.with_name(case.name.replace(".in.py", ".diag.txt"))
    got = [f"{d.line}:{d.col} {d.code}" for d in result.diagnostics]
    expected = diag_path.read_text().split("\n") if diag_path.exists() else []
    assert got == [line for line in expected if line], "diagnostics differ from .diag.txt"


def test_fixtures_exist():
    assert len(CASES) >= 5
