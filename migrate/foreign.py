"""Values visibly made by another array library (NumPy, SciPy: rules name them), whose methods
share torch's names and compute their own values: `adj.T.multiply(adj.T > adj)` on a SciPy
sparse matrix, `mx.dot(d)`. A method called on one, or an attribute read from one, is not a
torch Tensor's, and the engine leaves it as written.

Found flow-sensitively, in the safe direction (unknown is "maybe a tensor"): through each
function body (and the module's) in order, a name holds a foreign value after `name = expr`
where expr is one (a call of the library or of a method of a foreign value, an attribute or item
of one, an operation on foreign values and literals), until it is bound otherwise; a name
bound inside a loop, a try or a nested scope is unknown there and after. A parameter holds one
when every call of its function in the file passes one, and a call of the file's function
holds one when every return of it gives one (`X, y = make_table(n)` of a function returning
NumPy arrays: element by element for returned tuples), iterated to a fixpoint; a function used
other than by calls by its name gets no such fact. Read on the module the table pass
visits: the result is the set of ids of the receiver expressions (`X` in `X.attr`), and of the
elements of such values (`p[0]`) that index another value (a NumPy integer, which MindSpore's
tensor indexing rejects: the engine makes it `int(p[0])`)."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import libcst as cst

from msmigrate.names import TargetBindings, bound_names, walk as _walk

_LITERALS = (cst.Integer, cst.Float, cst.Imaginary)
# a tensor's methods handing its values to the host: what they return has its own methods
# (`a.round(3)` of NumPy, `lst.index(v)`, `lst.sort()` of a list)
_HOST_VALUES = frozenset({"numpy", "tolist", "item"})
_HOST_CALL = re.compile(r"\.\s*(?:numpy|tolist|item)\s*\(\s*\)")
_MAX_ROUNDS = 4
RETURNS = "<return>"   # the key of a function's return fact beside its parameters' (_Analysis.return_facts)


def foreign_receivers(module: cst.Module, imports: Mapping[str, str], libraries: Iterable[str],
                      source: str | None = None) -> tuple[set[int], set[int]]:
    """Ids of the expressions of `module` that are receivers (`X` in `X.attr`, `X.method()`)
    holding a value of one of `libraries` (top-level package names); and ids of the index
    expressions `p[0]` of such a value (a NumPy scalar) used to index a value that is not one
    (`mask[i, p[0]] = 1`: MindSpore's tensor indexing rejects NumPy integers, torch's takes them)."""
    libs = frozenset(libraries)
    own = {name for name, q in imports.items() if q.split(".")[0] in libs}
    if not own and source is not None and not _HOST_CALL.search(source):
        return set(), set()   # (the module's `source`: nothing foreign can be made in it)
    analysis = _Analysis(module, own)
    facts: dict[tuple[str, str], bool] = {}
    for _ in range(_MAX_ROUNDS):
        analysis.run(facts)
        new = {**analysis.parameter_facts(), **analysis.return_facts()}
        if new == facts:
            break
        facts = new
    return analysis.receivers, analysis.scalar_indices


def _bound_names(node: cst.CSTNode) -> set[str]:
    """Names a statement binds anywhere inside it (assignment, loop and with targets, imports,
    defs, walrus), not looking into nested scopes' bodies."""
    found: set[str] = set()

    class _V(TargetBindings):
        def _bind(self, target, value) -> None:
            found.update(bound_names(target))

        def visit_CompFor(self, n):
            return False   # a comprehension's variables are its own

        def visit_ImportAlias(self, n):
            name = n.asname.name if n.asname is not None else n.name
            if isinstance(name, cst.Name):
                found.add(name.value)
            elif isinstance(name, cst.Attribute):
                root = name
                while isinstance(root, cst.Attribute):
                    root = root.value
                if isinstance(root, cst.Name):
                    found.add(root.value)

        def visit_FunctionDef(self, n):
            found.add(n.name.value)
            return False

        def visit_ClassDef(self, n):
            found.add(n.name.value)
            return False

        def visit_Lambda(self, n):
            return False

        def visit_Global(self, n):
            found.update(x.name.value for x in n.names)

        def visit_Nonlocal(self, n):
            found.update(x.name.value for x in n.names)

    node.visit(_V())
    return found


class _Analysis:
    def __init__(self, module: cst.Module, own: set[str]) -> None:
        self.module, self.own = module, own
        self.receivers: set[int] = set()
        self.scalar_indices: set[int] = set()
        self.defs: dict[str, list[cst.FunctionDef]] = {}
        self.refs: dict[str, int] = {}   # name -> its Name nodes other than callees (the def's own is one)
        self._callees: set[int] = set()
        self._collect_defs(module)
        self.calls: dict[str, list[tuple[list[bool], dict[str, bool]] | None]] = {}
        self.returns: dict[str, list] = {}   # function -> what each return gives (_return_shape)
        self._functions: list[str] = []      # the functions being walked, innermost last

    def _collect_defs(self, module) -> None:
        outer = self

        class _V(cst.CSTVisitor):
            def __init__(self):
                self.classes = 0

            def visit_ClassDef(self, n):
                self.classes += 1

            def leave_ClassDef(self, n):
                self.classes -= 1

            def visit_FunctionDef(self, n):
                # methods are called through their objects: no facts for their parameters
                outer.defs.setdefault(n.name.value, []).append(n if not self.classes else None)

            def visit_Call(self, n):
                if isinstance(n.func, cst.Name):
                    outer._callees.add(id(n.func))

            def visit_Name(self, n):
                if id(n) not in outer._callees:
                    outer.refs[n.value] = outer.refs.get(n.value, 0) + 1

        module.visit(_V())

    def parameter_facts(self) -> dict[tuple[str, str], bool]:
        facts: dict[tuple[str, str], bool] = {}
        for name, defs in self.defs.items():
            calls = self.calls.get(name)
            if len(defs) != 1 or defs[0] is None or not calls or self.refs.get(name, 0) > 1 \
                    or any(c is None for c in calls):
                continue   # (the def's own name is one read)
            params = defs[0].params
            if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) and isinstance(params.star_arg, cst.Param):
                continue
            positional = [p.name.value for p in (*params.posonly_params, *params.params)]
            for i, p in enumerate(positional):
                passed = [pos[i] if i < len(pos) else kw.get(p) for pos, kw in calls]
                if all(v is True for v in passed):
                    facts[(name, p)] = True
        return facts

    def return_facts(self) -> dict[tuple[str, str], object]:
        """(function, RETURNS) -> True when every return of the file's function gives a foreign
        value, or a tuple of bools, element by element, when every return gives a tuple of that
        length (`return X, y` of NumPy arrays: `X, y = make_table(n)` binds two). Only functions
        defined once, not methods nor generators, and bound to nothing else."""
        facts: dict[tuple[str, str], object] = {}
        for name, shapes in self.returns.items():
            defs = self.defs.get(name, [])
            if len(defs) != 1 or defs[0] is None or self.refs.get(name, 0) > 1 or not shapes or \
                    any(isinstance(n, cst.Yield) for n in _walk(defs[0].body)):
                continue
            if all(shape is True for shape in shapes):
                facts[(name, RETURNS)] = True
            elif all(isinstance(shape, tuple) and len(shape) == len(shapes[0]) for shape in shapes):
                elements = tuple(all(shape[i] for shape in shapes) for i in range(len(shapes[0])))
                if any(elements):
                    facts[(name, RETURNS)] = elements
        return facts

    def _return_shape(self, value, env):
        """What a `return value` gives: True / False, or a tuple of them for a tuple literal."""
        if isinstance(value, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
            return tuple(self._foreign(e.value, env) for e in value.elements)
        return value is not None and self._foreign(value, env)

    # ---- one pass over the module with the current parameter facts ------------------------
    def run(self, facts) -> None:
        self.facts = facts
        self.receivers = set()
        self.scalar_indices = set()
        self.calls = {}
        self.returns = {}
        self._block(self.module.body, {})

    def _block(self, stmts, env: dict[str, bool]) -> None:
        for stmt in stmts:
            self._stmt(stmt, env)

    def _suite(self, suite, env) -> None:
        if isinstance(suite, cst.SimpleStatementSuite):   # `if x: y = 1`
            for small in suite.body:
                self._small(small, env)
        else:
            self._block(suite.body, env)

    def _forget(self, env, node) -> None:
        for name in _bound_names(node):
            env[name] = False

    def _stmt(self, stmt, env: dict[str, bool]) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self._small(small, env)
        elif isinstance(stmt, cst.FunctionDef):
            for d in stmt.decorators:
                self._scan(d.decorator, env)
            self._function(stmt)
            env[stmt.name.value] = False
        elif isinstance(stmt, cst.ClassDef):
            self._suite(stmt.body, {})
            env[stmt.name.value] = False
        elif isinstance(stmt, cst.If):
            self._scan(stmt.test, env)
            branches = [dict(env)]
            self._suite(stmt.body, branches[0])
            if stmt.orelse is not None:
                branches.append(dict(env))
                if isinstance(stmt.orelse, cst.If):
                    self._stmt(stmt.orelse, branches[1])
                else:
                    self._suite(stmt.orelse.body, branches[1])
            else:
                branches.append(env)
            for name in _bound_names(stmt):
                env[name] = all(b.get(name, False) for b in branches)
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                self._scan(item.item, env)
                if item.asname is not None:
                    for n in bound_names(item.asname.name):
                        env[n] = False
            self._suite(stmt.body, env)
        else:   # loops, try, match: a binding inside reaches the statements before it again
            self._forget(env, stmt)
            inner = dict(env)
            for child in stmt.children:
                self._part(child, inner)
            self._forget(env, stmt)

    def _part(self, node, env) -> None:
        """A part of a compound statement: blocks are walked, expressions scanned."""
        if isinstance(node, cst.BaseSuite):
            self._suite(node, env)
        elif isinstance(node, cst.BaseExpression):
            self._scan(node, env)
        elif isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement)):
            self._stmt(node, env) if isinstance(node, cst.BaseStatement) else self._small(node, env)
        else:
            for child in node.children:
                self._part(child, env)

    def _function(self, fn: cst.FunctionDef) -> None:
        env: dict[str, bool] = {}
        p = fn.params
        for param in (*p.posonly_params, *p.params, *p.kwonly_params):
            if param.default is not None:
                self._scan(param.default, {})
            env[param.name.value] = self.facts.get((fn.name.value, param.name.value), False)
        for extra in (p.star_arg, p.star_kwarg):
            if isinstance(extra, cst.Param):
                env[extra.name.value] = False
        self._functions.append(fn.name.value)
        try:
            self._suite(fn.body, env)
        finally:
            self._functions.pop()

    def _small(self, small, env) -> None:
        for child in small.children:
            if isinstance(child, cst.BaseExpression):
                self._scan(child, env)
            elif isinstance(child, cst.AssignTarget):
                self._scan(child.target, env)
        if isinstance(small, cst.Assign):
            value = self._foreign(small.value, env)
            elements = self._returned(small.value)
            for t in small.targets:
                if isinstance(t.target, cst.Name):
                    env[t.target.value] = value
                elif isinstance(elements, tuple) and isinstance(t.target, (cst.Tuple, cst.List)) and \
                        len(t.target.elements) == len(elements) and \
                        all(isinstance(e.value, cst.Name) for e in t.target.elements):
                    for e, foreign in zip(t.target.elements, elements):   # `X, y = make_table(n)`
                        env[e.value.value] = foreign
                else:
                    for n in bound_names(t.target):
                        env[n] = False
        elif isinstance(small, cst.Return):
            if self._functions:
                self.returns.setdefault(self._functions[-1], []).append(self._return_shape(small.value, env))
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
            env[small.target.value] = small.value is not None and self._foreign(small.value, env)
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            name = small.target.value
            env[name] = env.get(name, False) and self._operand(small.value, env)
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            for name in _bound_names(small):   # `import numpy as np` binds the library
                env[name] = name in self.own
        else:
            self._forget(env, small)

    # ---- expressions --------------------------------------------------------------------
    def _scan(self, expr, env) -> None:
        """Records the foreign receivers in `expr` and the calls of the file's functions."""
        outer = self

        class _V(cst.CSTVisitor):
            def visit_Attribute(self, n):
                if outer._foreign(n.value, env):
                    outer.receivers.add(id(n.value))

            def visit_Subscript(self, n):
                if outer._foreign(n.value, env):
                    return
                for element in n.slice:   # `p[0]` of a NumPy array: one element, a NumPy scalar
                    index = element.slice.value if isinstance(element.slice, cst.Index) else None
                    if isinstance(index, cst.Subscript) and outer._foreign(index.value, env) and all(
                            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Integer)
                            for e in index.slice):
                        outer.scalar_indices.add(id(index))

            def visit_Call(self, n):
                if isinstance(n.func, cst.Name) and n.func.value in outer.defs:
                    if any(a.star for a in n.args):
                        outer.calls.setdefault(n.func.value, []).append(None)
                    else:
                        pos = [outer._foreign(a.value, env) for a in n.args if a.keyword is None]
                        kw = {a.keyword.value: outer._foreign(a.value, env) for a in n.args if a.keyword is not None}
                        outer.calls.setdefault(n.func.value, []).append((pos, kw))

            def visit_Lambda(self, n):
                return False

            def visit_ListComp(self, n):
                return False

            def visit_SetComp(self, n):
                return False

            def visit_DictComp(self, n):
                return False

            def visit_GeneratorExp(self, n):
                return False

        expr.visit(_V())

    def _foreign(self, expr, env) -> bool:
        if isinstance(expr, cst.Name):
            if expr.value in env:
                return env[expr.value]
            return expr.value in self.own
        if isinstance(expr, cst.Attribute):
            return self._foreign(expr.value, env)
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _HOST_VALUES and not expr.args:
                return True   # `t.detach().numpy()`, `t.tolist()`: a NumPy array, a Python list or number
            if self._returned(expr) is True:   # the file's function returning one
                return True
            return self._foreign(expr.func, env)
        if isinstance(expr, cst.Subscript):
            return self._foreign(expr.value, env)
        if isinstance(expr, cst.BinaryOperation):
            return self._operands([expr.left, expr.right], env)
        if isinstance(expr, cst.Comparison):
            return self._operands([expr.left, *(c.comparator for c in expr.comparisons)], env)
        if isinstance(expr, cst.UnaryOperation):
            return self._foreign(expr.expression, env)
        if isinstance(expr, cst.IfExp):
            return self._foreign(expr.body, env) and self._foreign(expr.orelse, env)
        return False

    def _returned(self, expr):
        """The return fact of the file's function `expr` calls (True, a tuple of bools), else None."""
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            return self.facts.get((expr.func.value, RETURNS))
        return None

    def _operand(self, expr, env) -> bool:
        return isinstance(expr, _LITERALS) or self._foreign(expr, env)

    def _operands(self, exprs, env) -> bool:
        return all(self._operand(e, env) for e in exprs) and any(self._foreign(e, env) for e in exprs)
