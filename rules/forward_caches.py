"""A value cached on the module by `forward` (oliverguhr's Transformer, the classic
`TransformerModel`):

    self.src_mask = None                                  # __init__
    ...
    if self.src_mask is None or self.src_mask.size(0) != len(src):   # forward
        self.src_mask = self._generate_square_subsequent_mask(len(src))
    output = self.transformer_encoder(src, self.src_mask)

MindSpore compiles `construct` with the attribute written inside it: its reads are then a join of
None and a Tensor, which the layers it is handed to cannot test (`if src_mask is not None` in
nn.TransformerEncoder: the step fails to compile, "negative dimensions are not allowed" from an
astype in its LayerNorm). A cache changes no value, only when it is computed: where the attribute
is None in `__init__`, written in `forward` only by that one statement of an `if` testing it is
None, and read or written by no other method nor outside the class, `forward` reads it through a
local instead (`src_mask = self.src_mask`, the write `src_mask = ...`): the attribute stays None
and the value is computed on every call, as a compiled graph does anyway. A structural pass on
torch names, before the table pass."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer, walk


def _self_attr(node, name: str | None = None) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self" \
        and (name is None or node.attr.value == name)


def _assigned_attrs(function: cst.FunctionDef) -> list[tuple[str, cst.Assign]]:
    out = []
    for n in walk(function.body):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                for e in walk(t.target):
                    if _self_attr(e):
                        out.append((e.attr.value, n))
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            for e in walk(n.target):
                if _self_attr(e):
                    out.append((e.attr.value, n))
    return out


def _tests_none(test, name: str) -> bool:
    return any(isinstance(n, cst.Comparison) and _self_attr(n.left, name) and len(n.comparisons) == 1
               and isinstance(n.comparisons[0].operator, cst.Is)
               and isinstance(n.comparisons[0].comparator, cst.Name) and n.comparisons[0].comparator.value == "None"
               for n in walk(test))


class _Reads(cst.CSTTransformer):
    """`self.<name>` -> `<local>`; the cache's one write `self.<name> = v` -> `<local> = v`."""

    def __init__(self, name: str, local: str) -> None:
        super().__init__()
        self.name, self.local = name, local

    def leave_Attribute(self, original, updated):
        if _self_attr(updated, self.name):
            return cst.Name(self.local)
        return updated


class ForwardCachesPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "forward" in source and "is None" in source

    def __init__(self, ctx) -> None:
        self.caches: dict[int, list[tuple[int, str, str]]] = {}   # forward's id -> (if's id, attribute, local)
        outside = {n.attr.value for n in walk(ctx.module)
                   if isinstance(n, cst.Attribute) and not _self_attr(n)}
        for cls in (n for n in walk(ctx.module) if isinstance(n, cst.ClassDef)):
            methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
            init, forward = methods.get("__init__"), methods.get("forward")
            if init is None or forward is None:
                continue
            none_at_init = {name for name, a in _assigned_attrs(init) if isinstance(a, cst.Assign)
                            and isinstance(a.value, cst.Name) and a.value.value == "None"}
            written_elsewhere = {name for m in methods.values() if m is not init and m is not forward
                                 for name, _ in _assigned_attrs(m)}
            written_elsewhere |= {n.attr.value for m in methods.values() if m is not init and m is not forward
                                  for n in walk(m.body) if _self_attr(n)}   # read there: it would stay None
            writes: dict[str, list] = {}
            for name, a in _assigned_attrs(forward):
                writes.setdefault(name, []).append(a)
            attrs = {id(n.attr) for n in walk(forward) if isinstance(n, cst.Attribute)}
            bound = {n.value for n in walk(forward) if isinstance(n, cst.Name) and id(n) not in attrs}
            for stmt in forward.body.body:
                if not isinstance(stmt, cst.If) or stmt.orelse is not None:
                    continue
                for line in stmt.body.body:
                    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
                            and isinstance(line.body[0], cst.Assign) and len(line.body[0].targets) == 1
                            and _self_attr(line.body[0].targets[0].target)):
                        continue
                    name = line.body[0].targets[0].target.attr.value
                    if name in none_at_init and name not in written_elsewhere and name not in outside \
                            and writes.get(name) == [line.body[0]] and _tests_none(stmt.test, name) \
                            and name not in bound:
                        self.caches.setdefault(id(forward), []).append((id(stmt), name, name))
        wanted = set(self.caches)
        super().__init__(lambda s: isinstance(s, (cst.ClassDef, cst.FunctionDef)) and
                         (isinstance(s, cst.ClassDef) or id(s) in wanted))

    def leave_FunctionDef(self, original, updated):
        caches = self.caches.get(id(original))
        if not caches:
            return updated
        at = {id(stmt): i for i, stmt in enumerate(original.body.body)}
        function = updated
        for _, name, local in caches:
            function = function.visit(_Reads(name, local))
        body = list(function.body.body)
        for if_id, name, local in sorted(caches, key=lambda c: -at[c[0]]):   # the last first: indices hold
            body.insert(at[if_id], cst.parse_statement(
                f"{local} = self.{name}  # a cache forward keeps on the module, read here: compiled code "
                "cannot test a join of None and a Tensor\n"))
        self.changes += 1
        return function.with_changes(body=function.body.with_changes(body=body))
