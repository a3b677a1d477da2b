"""Name-level dataflow over libcst statements: what a statement reads and writes. Approximate
in the safe direction for slicing (a name counts as read wherever it appears as a value, and as
written wherever it may change): over-including a statement in a training step is recoverable,
cutting the gradient is not.

Writes are bindings (`x = ...`, `for x in`) and mutations: a mutating method call
(`losses.append(t)`, `d.setdefault(k, []).append(t)`, `x.add_(1)`), an item or attribute
assignment (`d[k] = v`, `self.buf = v`, `d[k] += v`), and the arguments of a call whose result
is dropped (`add_term(losses, t)` may store into `losses`). Paths name what is written under an
object (`self.parts` for `self.parts[k] = v`) so that one attribute's writes do not drag in every
statement touching `self`."""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import libcst as cst

from msmigrate.names import dotted

# methods that change their receiver (Python containers, queues, replay buffers); a method whose
# name ends in a single `_` is torch's in-place form
MUTATING_METHODS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "remove",
                    "clear", "add", "discard", "sort", "reverse", "appendleft", "extendleft", "push",
                    "put", "put_nowait", "store", "record", "__setitem__", "__iadd__"}
# calls whose dropped result does not mean they stored their arguments somewhere: output
_OUTPUT_CALLS = {"print", "len", "isinstance", "id", "repr", "str", "type", "write", "info", "debug",
                 "warning", "error", "log", "add_scalar", "add_scalars", "set_description", "set_postfix"}


# methods that hand back (a view of) something their receiver holds
_ACCESSORS = {"setdefault", "get", "values", "items", "keys", "__getitem__", "view", "reshape", "narrow",
              "select", "expand", "transpose", "permute", "t", "squeeze", "unsqueeze", "flatten", "detach",
              "data", "view_as", "as_strided", "diagonal", "unfold", "split", "chunk", "unbind"}


def path_of(node) -> str | None:
    """`self.parts` for `self.parts`, `self.parts[k]`, `self.parts.setdefault(k, [])`, `w.view(-1)`;
    None when the expression is not rooted at a name, or is a new object a call made
    (`torch.zeros(2).fill_(1)` changes no variable)."""
    while isinstance(node, (cst.Subscript, cst.Call)):
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in _ACCESSORS:
            node = node.func.value   # what it hands back lives in its receiver
        else:
            return None
    return dotted(node)


def related(a: str, b: str) -> bool:
    """Paths that may denote the same object or one inside the other."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


_CONSTANTS = {"True", "False", "None"}   # libcst Names, but no variables


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.reads: Counter[str] = Counter()
        self.writes: set[str] = set()          # names bound or mutated
        self.binds: set[str] = set()           # names bound by a simple statement (`x = ...`)
        self.mutated: set[str] = set()         # paths changed in place
        self.read_paths: set[str] = set()
        self._targets: set[int] = set()
        self._comp_locals: list[set[str]] = []   # names bound by enclosing comprehensions

    def _target(self, node) -> None:
        if isinstance(node, cst.Name):
            self.writes.add(node.value)
            self.binds.add(node.value)
            self._targets.add(id(node))
        elif isinstance(node, (cst.Tuple, cst.List)):
            for el in node.elements:
                self._target(el.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            self._mutate(node.value if isinstance(node, cst.Subscript) else node)

    def _mutate(self, node) -> None:
        path = path_of(node)
        if path is None or path in _CONSTANTS or any(path.split(".")[0] in c for c in self._comp_locals):
            return
        self.mutated.add(path)
        if "." not in path:
            self.writes.add(path)

    def visit_AssignTarget(self, node) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node) -> None:
        if isinstance(node.target, cst.Name):
            self.writes.add(node.target.value)
            self.mutated.add(node.target.value)   # an accumulator: `loss = 0` then `loss += t`
            self.reads[node.target.value] += 1
            self._targets.add(id(node.target))
        else:
            self._mutate(node.target.value if isinstance(node.target, cst.Subscript) else node.target)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            meth = func.attr.value
            if meth in MUTATING_METHODS or (meth.endswith("_") and not meth.endswith("__")):
                self._mutate(func.value)

    def visit_Expr(self, node: cst.Expr) -> None:
        # a call whose result is dropped works by its effects: it may store its arguments
        call = node.value
        func = call.func if isinstance(call, cst.Call) else None
        leaf = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
        in_place = isinstance(func, cst.Attribute) and leaf.endswith("_") and not leaf.endswith("__")
        if func is not None and leaf not in _OUTPUT_CALLS and not in_place:   # x.fill_(v) changes x only
            for arg in call.args:
                if isinstance(arg.value, (cst.Name, cst.Attribute)):
                    self._mutate(arg.value)

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
        self.binds.add(node.name.value)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        root = node.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            node.value.visit(self)
        elif self._read(root, whole=False):
            # `self.parts.values` reads that path, not all of `self`
            self.read_paths.add(path_of(node))
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._read(node)

    def _read(self, node: cst.Name, whole: bool = True) -> bool:
        if node.value in _CONSTANTS or id(node) in self._targets or any(node.value in c for c in self._comp_locals):
            return False
        self.reads[node.value] += 1
        if whole:
            self.read_paths.add(node.value)
        return True


def _scan(node: cst.CSTNode) -> _Names:
    v = _Names()
    node.visit(v)
    return v


def names(node: cst.CSTNode) -> tuple[Counter, set[str]]:
    v = _scan(node)
    return v.reads, v.writes


def reads(node: cst.CSTNode) -> set[str]:
    return set(names(node)[0])


def writes(node: cst.CSTNode) -> set[str]:
    return names(node)[1]


class Effects(NamedTuple):
    read: set[str]      # paths read
    binds: set[str]     # names bound by a simple statement
    writes: set[str]    # names bound or mutated (as `writes()`)
    mutated: set[str]   # paths changed in place, not rebound

    @property
    def changed(self) -> set[str]:
        """Paths bound or changed in place."""
        return self.mutated | self.writes


def effects(node: cst.CSTNode) -> Effects:
    v = _scan(node)
    return Effects(v.read_paths, v.binds, v.writes, v.mutated)


def backward_slice(stmts: list, needed: set[str]) -> tuple[list[int], set[str]]:
    """Indices of the statements (in order) that compute `needed`, and the names the slice
    reads before writing them (its inputs). A statement belongs to the slice when it binds or
    changes anything needed; only a plain binding by a simple statement (`x = ...`) ends the
    need for earlier writers of that name: a mutation or a binding under `if`/`for` does not."""
    chosen = []
    need = set(needed)
    for i in range(len(stmts) - 1, -1, -1):
        e = effects(stmts[i])
        if any(related(w, p) for w in e.changed for p in need):
            chosen.append(i)
            killed = e.binds if isinstance(stmts[i], cst.SimpleStatementLine) else set()
            need = (need - killed) | e.read
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
        def _read(self, n: cst.Name, whole: bool = True) -> bool:
            if id(n) not in self._targets and n.value not in out:
                out.append(n.value)
            return super()._read(n, whole)

    node.visit(_V())
    return out
