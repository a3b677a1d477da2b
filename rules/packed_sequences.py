"""Packed sequences -> MindSpore's `seq_length`. torch runs an RNN over a batch of sequences of
different lengths through a PackedSequence:

    packed = pack_padded_sequence(x, lengths, batch_first=True)
    out, h = self.rnn(packed, h0)
    out, lens = pad_packed_sequence(out, batch_first=True)

MindSpore's nn.RNN/GRU/LSTM take the padded batch and the lengths (`seq_length=`): the steps
past each length are skipped, the output there is zero and the final state is each sequence's
last valid one, as torch's (checked for all three, one or two layers, both directions, unsorted
lengths; fixtures/programs/train_packed_sequences.py trains like torch). So the packing goes, the RNN gets `x` and
`seq_length=lengths`, and `pad_packed_sequence(out)` is `(out, lengths)`. Where the RNN's own
`batch_first` differs from the packing's (a PackedSequence has no layout; MindSpore reads `x` in
the RNN's), the batch is transposed. A packed value used any other way is left (the table marks
it). torch's padded output has max(lengths) steps, or `total_length`; MindSpore's keeps the
input's: the same when the longest sequence fills the batch, which is marked for review where no
`total_length` is given. A
structural pass on torch code: what it writes (`x.transpose(0, 1)`, `torch.as_tensor(lengths)`)
converts with the tables."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer, bound_name, dotted, resolve

PACK = "torch.nn.utils.rnn.pack_padded_sequence"
PAD = "torch.nn.utils.rnn.pad_packed_sequence"
RNNS = ("torch.nn.RNN", "torch.nn.GRU", "torch.nn.LSTM")
# what only moves the lengths to the host: torch's packing accepts a list, a tensor or an array
_HOST_SUFFIXES = ("cpu", "numpy", "tolist", "data", "detach", "long", "int")
PAD_NOTE = ("pad_packed_sequence: MindSpore's RNN output keeps the input's length; torch's has "
            "max(lengths) steps (total_length= if given): the same when the longest sequence fills the batch")


def _arg(call: cst.Call, index: int, name: str):
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


def _truth(expr) -> bool | None:
    if expr is None:
        return False
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _as_tensor(torch_name: str | None, expr) -> cst.BaseExpression:
    if torch_name is None:
        return expr
    return cst.parse_expression(f"{torch_name}.as_tensor(_)").with_changes(args=[cst.Arg(expr)])


def _lengths(expr, torch_name: str | None) -> cst.BaseExpression:
    """The lengths as a tensor expression (torch code): host moves dropped, a literal list made a tensor."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args \
                and expr.func.attr.value in _HOST_SUFFIXES:
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            expr = expr.value
        else:
            break
    if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp)):
        return _as_tensor(torch_name, expr)
    return expr


class _RnnLayouts(cst.CSTVisitor):
    """`self.rnn = nn.GRU(..., batch_first=True)`: the batch_first of each RNN the file builds
    (dotted name -> bool, None when not a literal)."""

    def __init__(self, imports: dict) -> None:
        self.imports = imports
        self.batch_first: dict[str, bool | None] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and resolve(node.value.func, self.imports) in RNNS:
            for t in node.targets:
                name = dotted(t.target)
                if name is not None:
                    self.batch_first[name] = _truth(_arg(node.value, 99, "batch_first"))


class PackedSequencesPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "pack_padded_sequence" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.imports = dict(ctx.names.imports)
        layouts = _RnnLayouts(self.imports)
        ctx.module.visit(layouts)
        self.rnn_batch_first = layouts.batch_first
        self.torch = bound_name(self.imports, "torch")

    def _is(self, call, qualname: str) -> bool:
        return isinstance(call, cst.Call) and resolve(call.func, self.imports) == qualname

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._block(updated.body))

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._block(updated.body))

    def _block(self, body) -> list:
        packs: dict[str, tuple] = {}     # name of a packed value -> (padded batch, lengths, batch_first)
        padded: dict[str, tuple] = {}    # name of an RNN's output -> (lengths, its batch_first)
        out = []
        for i, stmt in enumerate(body):
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and self._is(small.value, PACK) \
                    and isinstance(small.targets[0].target, cst.Name):
                name = small.targets[0].target.value
                if self._only_rnn_inputs(name, body[i + 1:]):
                    packs[name] = self._packing(small.value)
                    self.changes += 1
                    continue   # the packing goes: its users take the padded batch
            if isinstance(stmt, cst.SimpleStatementLine) and (packs or padded or "pack_padded_sequence" in
                                                               cst.Module([stmt]).code):
                rewrite = _Rewrite(self, packs, padded)
                new = stmt.visit(rewrite)
                if rewrite.padded_output:
                    pos = self.ctx.positions.get(stmt)
                    line, col = (pos.start.line, pos.start.column + 1) if pos is not None else (1, 1)
                    marker = self.ctx.reporter.flag("review", PAD_NOTE, line, col)
                    new = new.with_changes(leading_lines=[*new.leading_lines, cst.EmptyLine(comment=cst.Comment(marker))])
                stmt = new
            out.append(stmt)
        return out

    def _packing(self, call: cst.Call) -> tuple:
        return (_arg(call, 0, "input"), _lengths(_arg(call, 1, "lengths"), self.torch),
                _truth(_arg(call, 2, "batch_first")))

    def _only_rnn_inputs(self, name: str, rest) -> bool:
        """Every later use of `name` in the block is the first argument of a call (an RNN's)."""
        uses = _Uses(name)
        for stmt in rest:
            stmt.visit(uses)
        return uses.calls > 0 and uses.calls == uses.loads

    def rnn_call(self, call: cst.Call, packing: tuple, padded: dict, targets) -> cst.Call:
        x, lengths, pack_bf = packing
        rnn_bf = self.rnn_batch_first.get(dotted(call.func) or "")
        if pack_bf is not None and rnn_bf is not None and pack_bf != rnn_bf:
            x = cst.parse_expression("_.transpose(0, 1)").with_changes(
                func=cst.Attribute(x, cst.Name("transpose")))
        args = [call.args[0].with_changes(value=x), *call.args[1:]]
        if args[-1].comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(cst.Arg(lengths, keyword=cst.Name("seq_length"),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
        layout = rnn_bf if rnn_bf is not None else pack_bf
        for t in targets:
            first = t.elements[0].value if isinstance(t, (cst.Tuple, cst.List)) and t.elements else t
            if isinstance(first, cst.Name):
                padded[first.value] = (lengths, layout)
        return call.with_changes(args=args)


class _Uses(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name, self.loads, self.calls = name, 0, 0

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.loads += 1

    def visit_Call(self, node: cst.Call) -> None:
        if node.args and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == self.name \
                and node.args[0].keyword is None:
            self.calls += 1


class _Rewrite(cst.CSTTransformer):
    """Within one statement: RNN calls on a packed value (named, or packed inline), and
    pad_packed_sequence of their outputs."""

    def __init__(self, owner: PackedSequencesPass, packs: dict, padded: dict) -> None:
        super().__init__()
        self.owner, self.packs, self.padded = owner, packs, padded
        self.targets = []
        self.padded_output = False   # a pad_packed_sequence without total_length (marked for review)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.targets = [t.target for t in node.targets]

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        owner = self.owner
        first = updated.args[0].value if updated.args and updated.args[0].keyword is None else None
        if isinstance(first, cst.Name) and first.value in self.packs:
            return owner.rnn_call(updated, self.packs[first.value], self.padded, self.targets)
        if owner._is(first, PACK):
            owner.changes += 1
            return owner.rnn_call(updated, owner._packing(first), self.padded, self.targets)
        if owner._is(updated, PAD):
            source = _arg(updated, 0, "sequence")
            found = self.padded.get(source.value) if isinstance(source, cst.Name) else None
            if found is None or _arg(updated, 2, "padding_value") is not None:
                return updated
            self.padded_output = _arg(updated, 3, "total_length") is None
            lengths, layout = found
            value = source
            pad_bf = _truth(_arg(updated, 1, "batch_first"))
            if pad_bf is not None and layout is not None and pad_bf != layout:
                value = cst.parse_expression("_.transpose(0, 1)").with_changes(
                    func=cst.Attribute(source, cst.Name("transpose")))
            owner.changes += 1
            return cst.Tuple([cst.Element(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                              cst.Element(lengths)])
        return updated
