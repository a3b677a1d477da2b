"""Positions computed on demand (msmigrate.sourcemap) must equal libcst's PositionProvider, and
the statement filter must never skip a statement that mentions a name it was given."""
import ast
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from msmigrate.sourcemap import Focus, Positions, SourceMap

FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "convert").glob("*.in.py"))

TRICKY = '''\
# header comment
import torch  # why


@decorator(torch.float32)
# between decorators
@other
def f(a: torch.Tensor = torch.zeros(1), *, b=(
        torch.ones(2))) -> torch.Tensor:
    """doc"""
    if a: x = torch.zeros(3); y = "é"; z = torch.ones(1)
    elif torch.is_tensor(a):
        pass
    else:
        try:
            pass
        except (torch.cuda.OutOfMemoryError, ValueError) as e:
            raise
        finally:
            pass
    with torch.no_grad(), open("f") as fh:
    	w = [torch.cat([a,
    	                torch.zeros(1)]) for _ in range(2)]
    s = "ünïcode" + str(torch.tensor(1).item())
    return (torch
            .zeros(2))


class C(torch.nn.Module, metaclass=M):
    def forward(self, x):
        match x:
            case torch.Tensor():
                return torch.relu(x)
        return x
'''

KINDS = (cst.Call, cst.Name, cst.Attribute, cst.BaseStatement, cst.BaseSmallStatement, cst.Decorator,
         cst.Arg, cst.Param, cst.ExceptHandler)


class _Compare(cst.CSTVisitor):
    def __init__(self, positions, reference):
        self.positions, self.reference, self.stack = positions, reference, []
        self.checked, self.wrong = 0, []

    def on_visit(self, node):
        if isinstance(node, cst.BaseStatement):
            self.stack.append(node)
        if isinstance(node, KINDS):
            got = self.positions.get(node, near=self.stack[-1] if self.stack else None)
            want = self.reference.get(node)
            self.checked += 1
            if (got and got.start) != (want and want.start):
                self.wrong.append((type(node).__name__, got and got.start, want and want.start))
        return True

    def on_leave(self, node):
        if isinstance(node, cst.BaseStatement):
            self.stack.pop()


def _compare(source: str):
    module = cst.parse_module(source)
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = Positions(module, source, SourceMap(module, ast.parse(source)))
    visitor = _Compare(positions, reference)
    module.visit(visitor)
    return visitor, positions


def test_positions_match_libcst_on_tricky_code():
    visitor, positions = _compare(TRICKY)
    assert visitor.checked > 100
    assert visitor.wrong == []
    assert positions.fallbacks == 1   # the match statement is placed by the whole-module pass


def test_positions_match_libcst_on_fixtures():
    checked = 0
    for path in FIXTURES:
        source = path.read_text(encoding="utf-8")
        visitor, positions = _compare(source)
        assert visitor.wrong == [], path.name
        checked += visitor.checked
        if "match " not in source:
            assert positions.fallbacks == 0, path.name
    assert checked > 1000


def test_focus_keeps_every_statement_that_mentions_a_name():
    module = cst.parse_module(TRICKY)
    smap = SourceMap(module, ast.parse(TRICKY))
    focus = Focus(TRICKY, smap, {"torch"}, {"item"})
    kept, skipped = [], []

    class Walk(cst.CSTVisitor):
        def on_visit(self, node):
            if isinstance(node, cst.BaseStatement):
                (kept if focus.wants(node) else skipped).append(module.code_for_node(node))
            return True

    module.visit(Walk())
    assert all("torch" not in code and ".item" not in code for code in skipped)
    assert any("pass" in code for code in skipped) and kept
