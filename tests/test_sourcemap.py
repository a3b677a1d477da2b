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


def test_match_statement_is_placed_without_the_whole_module_pass():
    source = "import torch\n\n" + TRICKY[TRICKY.index("class C"):]
    visitor, positions = _compare(source)
    assert visitor.checked > 20 and visitor.wrong == []
    assert positions.fallbacks == 0


def test_statement_built_by_a_pass_has_no_position_and_needs_no_fallback():
    module = cst.parse_module(TRICKY)
    positions = Positions(module, TRICKY, SourceMap(module, ast.parse(TRICKY)))
    assert positions.get(cst.parse_statement("x = torch.zeros(1)\n")) is None
    assert positions.fallbacks == 0
    assert positions.get(module.body[0]).start.line == 2   # originals still placed


def _check_top_level_slices(source: str) -> int:
    module = cst.parse_module(source)
    smap = SourceMap(module, ast.parse(source), source)
    for stmt in module.body:
        text = smap.top_level_text(stmt)
        assert text == module.code_for_node(stmt)
        assert smap.top_level_names(stmt) == {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}
    # anything else is not sliced: nested statements, copies
    nested = module.body[-1].body.body[0]
    assert smap.top_level_text(nested) is None and smap.top_level_names(nested) is None
    assert smap.top_level_text(module.body[0].deep_clone()) is None
    return len(module.body)


def test_top_level_statements_are_sliced_from_the_source_as_libcst_generates_them():
    assert _check_top_level_slices(TRICKY) == 3
    assert _check_top_level_slices(TRICKY + "\n# footer comment\n\n") == 3
    crlf = TRICKY.replace("\n", "\r\n")
    assert _check_top_level_slices(crlf) == 3
    for path in FIXTURES:
        source = path.read_text(encoding="utf-8")
        module = cst.parse_module(source)
        smap = SourceMap(module, ast.parse(source), source)
        assert smap.spans or not module.body, path.name
        for stmt in module.body:
            assert smap.top_level_text(stmt) == module.code_for_node(stmt), path.name


def test_layouts_that_do_not_add_up_are_not_sliced():
    # a backslash continuation on a blank line: one EmptyLine, two physical lines
    source = "import torch\n \\\n\nx = torch.zeros(1)\n"
    module = cst.parse_module(source)
    smap = SourceMap(module, ast.parse(source), source)
    assert "\\" in module.body[1].leading_lines[0].whitespace.value
    assert smap.top_level_text(module.body[1]) is None and smap.top_level_text(module.body[0]) is None
    no_newline = "import torch\nx = 1"
    module = cst.parse_module(no_newline)
    assert SourceMap(module, ast.parse(no_newline), no_newline).top_level_text(module.body[0]) is None


def test_unchanged_nested_statements_generate_as_their_source_text():
    module = cst.parse_module(TRICKY)
    smap = SourceMap(module, ast.parse(TRICKY), TRICKY)
    stood_in = 0
    for stmt in module.body:
        if not isinstance(stmt, cst.BaseCompoundStatement):
            continue
        changed = stmt.with_changes(leading_lines=[])   # a new top-level object, originals inside
        copy = smap.with_verbatim(changed)
        stood_in += copy is not changed
        assert module.code_for_node(copy) == module.code_for_node(changed)
        # an original moved one level deeper is generated, not copied at its old indentation
        deeper = changed.with_changes(body=changed.body.with_changes(body=[
            cst.If(test=cst.Name("flag"), body=cst.IndentedBlock(body=list(changed.body.body)))]))
        assert module.code_for_node(smap.with_verbatim(deeper)) == module.code_for_node(deeper)
    assert stood_in == 2
