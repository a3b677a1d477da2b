"""Name-level dataflow over libcst statements: what a statement reads and writes. Approximate
in the safe direction for slicing (a name counts as read wherever it appears as a value)."""
from __future__ import annotations

from collections import Counter

import libcst as cst


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.reads: Counter[str] = Counter()
        self.writes: set[str] = set()
        self._targets: set[int] = set()
        self._comp_locals: list[set[str]] = []   # names bound by enclosing comprehensions

    def _target(self, node) -> None:
        if isinstance(node, cst.Name):
            self.writes.add(node.value)
            self._targets.add(id(node))
        elif isinstance(node, (cst.Tuple, cst.List)):
            for el in node.elements:
                self._target(el.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)

    def visit_AssignTarget(self, node) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node) -> None:
        if isinstance(node.target, cst.Name):
            self.writes.add(node.target.value)
            self.reads[node.target.value] += 1
            self._targets.add(id(node.target))

    def visit_For(self, node) -> None:
        self._target(node.target)

    def _enter_comp(self, node) -> None:
        local: set[str] = set()
        comp = node.for_in
        while comp is not None:
            inner = _Names()
            inner._target(comp.target)
            local |= inner.writes
            self._targets |= inner._targets
            comp = comp.inner_for_in
        self._comp_locals.append(local)

    def _leave_comp(self, node) -> None:
        self._comp_locals.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _enter_comp
    leave_ListComp = leave_SetComp = leave_GeneratorExp = leave_DictComp = _leave_comp

    def visit_WithItem(self, node) -> None:
        if node.asname is not None:
            self._target(node.asname.name)

    def visit_FunctionDef(self, node) -> bool:
        self.writes.add(node.name.value)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._targets and not any(node.value in c for c in self._comp_locals):
            self.reads[node.value] += 1


def names(node: cst.CSTNode) -> tuple[Counter, set[str]]:
    v = _Names()
    node.visit(v)
    return v.reads, v.writes


def reads(node: cst.CSTNode) -> set[str]:
    return set(names(node)[0])


def writes(node: cst.CSTNode) -> set[str]:
    return names(node)[1]


def backward_slice(stmts: list, needed: set[str]) -> tuple[list[int], set[str]]:
    """Indices of the statements (in order) that compute `needed`, and the names the slice
    reads before writing them (its inputs)."""
    chosen = []
    need = set(needed)
    for i in range(len(stmts) - 1, -1, -1):
        r, w = names(stmts[i])
        if w & need:
            chosen.append(i)
            need = (need - w) | set(r)
    chosen.reverse()
    bound: set[str] = set()
    free: list[str] = []
    _free_in([stmts[i] for i in chosen], bound, free)
    for n in needed:
        if n not in bound and n not in free:
            free.append(n)
    return chosen, set(free)


def _free_in(stmts: list, bound: set[str], free: list[str]) -> None:
    """Names read before any write, in statement order (descending into compound statements)."""
    def read(node) -> None:
        for n in names(node)[0]:
            if n not in bound and n not in free:
                free.append(n)

    for stmt in stmts:
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                read(item.item)
                if item.asname is not None:
                    bound |= writes(item.asname)
            _free_in(list(stmt.body.body), bound, free)
        elif isinstance(stmt, (cst.For, cst.While)):
            read(stmt.iter if isinstance(stmt, cst.For) else stmt.test)
            if isinstance(stmt, cst.For):
                bound |= names(stmt.target)[1] | set(names(stmt.target)[0])
            _free_in(list(stmt.body.body), bound, free)
        elif isinstance(stmt, cst.If):
            read(stmt.test)
            branches = [stmt.body, stmt.orelse.body if stmt.orelse is not None else None]
            after = set(bound)
            for br in branches:
                if br is None:
                    continue
                inner = set(bound)
                _free_in(list(br.body) if hasattr(br, "body") else [br], inner, free)
                after |= inner
            bound |= after
        else:
            read(stmt)
            bound |= writes(stmt)


def ordered_reads(node: cst.CSTNode) -> list[str]:
    """Names read, in order of first appearance."""
    out: list[str] = []

    class _V(_Names):
        def visit_Name(self, n: cst.Name) -> None:
            if id(n) not in self._targets and n.value not in out:
                out.append(n.value)

    node.visit(_V())
    return out
