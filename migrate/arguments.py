"""Objects passed into a file's own functions as arguments.

`def train(model, loss, optimizer, x, y): ... loss(out, y)` called as
`train(model, nn.CrossEntropyLoss(), ...)` or with a name bound to one: inside `train`, `loss`
is that object, as sure as if it were made there, when every call of `train` in the file
passes the same kind of object for it. This module finds those parameters from the original
source (stdlib `ast`), without API knowledge: a fact is "the parameter `loss` of `train` holds
what a call of `torch.nn.CrossEntropyLoss` creates" (the engine decides what that means).

Sound by refusal: a function defined more than once, used other than by being called by its
name (passed as a callback, stored, decorated), called with `*args`/`**kwargs`, or a call that
leaves the parameter to its default, and a name bound to anything but one kind of call in its
scope, give no fact. Calls from other files are not seen (a helper another file calls with
another loss would get this file's facts).
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping

from msmigrate.names import ast_dotted, is_source

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_NESTED = (*_SCOPES, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_MAX_DEPTH = 8   # a chain of functions passing the object on, longer than this is not followed



def _params(func) -> tuple[list[str], list[str]]:
    a = func.args
    return [p.arg for p in (*a.posonlyargs, *a.args)], [p.arg for p in a.kwonlyargs]


def _own_nodes(body: Iterable[ast.AST]):
    """The nodes of a scope's body, not descending into nested scopes (their defaults and
    decorators, evaluated in this scope, are included)."""
    stack = list(body)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend([*node.decorator_list, *node.args.defaults,
                          *(d for d in node.args.kw_defaults if d is not None)][::-1])
            continue
        if isinstance(node, ast.ClassDef):
            stack.extend([*node.decorator_list, *node.bases][::-1])
            continue
        if isinstance(node, _NESTED):
            continue
        stack.extend(list(ast.iter_child_nodes(node))[::-1])


class _Scope:
    def __init__(self, node, parent: "_Scope | None") -> None:
        self.node, self.parent = node, parent
        body = node.body if isinstance(node, (ast.Module, *_SCOPES[:2], ast.ClassDef)) else []
        self.params: set[str] = set()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            self.params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
            self.params |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
        # name -> values assigned to it by `name = value` (None: bound some other way)
        self.values: dict[str, list] = {}
        self.nonlocal_: set[str] = set()
        self.defined: dict[str, int] = {}   # name -> how many of its None values are a def, class or import
        assigned: set[int] = set()   # targets of `name = value` (their value is recorded)
        for n in _own_nodes(body if not isinstance(node, ast.Lambda) else [node.body]):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                self.values.setdefault(n.targets[0].id, []).append(n.value)
                assigned.add(id(n.targets[0]))
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and _unpacked(n.targets[0], n.value):
                for target, value in zip(n.targets[0].elts, n.value.elts):   # `ce, mse = CE(), MSE()`
                    self.values.setdefault(target.id, []).append(value)
                    assigned.add(id(target))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                if id(n) not in assigned:
                    self.values.setdefault(n.id, []).append(None)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.values.setdefault(n.name, []).append(None)
                self.defined[n.name] = self.defined.get(n.name, 0) + 1
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for a in n.names:
                    bound = (a.asname or a.name).split(".")[0]
                    self.values.setdefault(bound, []).append(None)
                    self.defined[bound] = self.defined.get(bound, 0) + 1
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                self.nonlocal_.update(n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                self.values.setdefault(n.name, []).append(None)
            elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                self.values.setdefault(n.target.id, []).append(None)

    def binds(self, name: str) -> bool:
        return name not in self.nonlocal_ and (name in self.params or name in self.values)


def argument_objects(tree: ast.Module, imports: Mapping[str, str], project: Mapping[str, str],
                     returns_self: Iterable[str], plain_decorators: Iterable[str] = ()) -> dict[str, dict[str, str]]:
    """Function name -> {parameter -> torch API whose object every call passes for it}.
    `imports`: the file's top-level import bindings (name -> qualified name); `project`: names
    of factories/classes of the project (as the file spells them) -> torch API; `returns_self`:
    methods returning their object (`nn.CrossEntropyLoss().to(device)`); `plain_decorators`:
    decorators (qualified names, called or not) that return the function they decorate."""
    return _Analysis(tree, imports, project, frozenset(returns_self), frozenset(plain_decorators)).run()


def returned_objects(tree: ast.Module, imports: Mapping[str, str], project: Mapping[str, str],
                     returns_self: Iterable[str], plain_decorators: Iterable[str] = ()) -> dict[str, object]:
    """Function name -> the torch API of the object every `return` of the file's function gives
    (`def make_loss(): return nn.CrossEntropyLoss()`), or a tuple of them, one per element of
    the tuple every return gives (`return opt, StepLR(opt, 5)` with `opt = torch.optim.SGD(...)`
    in the function: ("torch.optim.SGD", "torch.optim.lr_scheduler.StepLR")), None where unknown.
    Same refusals as argument_objects: a function defined more than once, decorated, a
    generator, or whose returns differ, gives none."""
    return _Analysis(tree, imports, project, frozenset(returns_self), frozenset(plain_decorators)).returned()


class _Analysis:
    def __init__(self, tree, imports, project, returns_self, plain_decorators=frozenset()) -> None:
        self.imports, self.project, self.returns_self = imports, project, returns_self
        self.plain_decorators = plain_decorators
        self.scopes: dict[int, _Scope] = {}
        self.defs: dict[str, list] = {}        # name -> FunctionDef nodes (not methods)
        self.calls: dict[str, list] = {}       # name -> (Call, scope of the call)
        self.loads: dict[str, int] = {}        # name -> Name loads that are not the callee of a call
        self.callees: set[int] = set()
        self._walk(tree, None)
        self.memo: dict[tuple[str, str], str | None] = {}
        self.busy: set[tuple[str, str]] = set()

    def _walk(self, node, parent: _Scope | None) -> None:
        scope = _Scope(node, parent)
        self.scopes[id(node)] = scope
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        for n in _own_nodes(body):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not isinstance(node, ast.ClassDef):
                    self.defs.setdefault(n.name, []).append(n)
                if any(not self._plain(d) for d in n.decorator_list):
                    self.defs.setdefault(n.name, []).append(None)   # a decorator may replace it
                self._walk(n, scope)
            elif isinstance(n, (ast.Lambda, ast.ClassDef)):
                self._walk(n, scope)
            elif isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                for sub in ast.walk(n):   # calls in a comprehension: arguments not followed
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                        self.loads[sub.id] = self.loads.get(sub.id, 0) + 1
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                self.calls.setdefault(n.func.id, []).append((n, scope))
                self.callees.add(id(n.func))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in self.callees:
                self.loads[n.id] = self.loads.get(n.id, 0) + 1

    def _plain(self, decorator) -> bool:
        name = ast_dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
        head, _, rest = name.partition(".")
        return f"{self.imports.get(head, head)}{'.' if rest else ''}{rest}" in self.plain_decorators

    def run(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for name, defs in self.defs.items():
            if len(defs) != 1 or defs[0] is None:
                continue
            positional, keyword = _params(defs[0])
            rebound = self.scopes[id(defs[0])].values   # a parameter assigned in the body: not followed
            found = {p: q for p in (*positional, *keyword)
                     if p not in rebound and (q := self.param(name, p)) is not None}
            if found:
                out[name] = found
        return out

    def returned(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for name, defs in self.defs.items():
            if len(defs) != 1 or defs[0] is None or \
                    any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(defs[0].body)):
                continue
            scope, shapes = self.scopes[id(defs[0])], set()
            for r in _returns(defs[0]):
                v = r.value
                if isinstance(v, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in v.elts):
                    shapes.add(tuple(self.value(e, scope, 1) for e in v.elts))
                else:
                    shapes.add(None if v is None else self.value(v, scope, 1))
            shape = shapes.pop() if len(shapes) == 1 else None
            if shape is not None and (isinstance(shape, str) or any(shape)):
                out[name] = shape
        return out

    def param(self, func: str, param: str, depth: int = 0) -> str | None:
        """The torch API of the object every call of `func` passes as `param`, else None."""
        key = (func, param)
        if key in self.memo:
            return self.memo[key]
        if key in self.busy or depth > _MAX_DEPTH:
            return None
        defs = self.defs.get(func, [])
        if len(defs) != 1 or defs[0] is None or self.loads.get(func) or not self.calls.get(func):
            return None
        positional, keyword = _params(defs[0])
        self.busy.add(key)
        try:
            found: set[str | None] = set()
            for call, scope in self.calls[func]:
                if _owner(scope, func) is not self.scopes[id(defs[0])].parent:
                    found.add(None)   # the name means another thing where it is called
                    break
                arg = _argument(call, positional, param)
                found.add(None if arg is None else self.value(arg, scope, depth + 1))
                if None in found or len(found) > 1:
                    break
            result = found.pop() if len(found) == 1 else None
        finally:
            self.busy.discard(key)
        self.memo[key] = result
        return result

    def _passed_through(self, func: str, call: ast.Call):
        """The argument a call of the file's function `func` passes for the parameter every
        return of that function returns unchanged (`def seeded(net): ...; return net`), else None."""
        defs = self.defs.get(func, [])
        if len(defs) != 1 or defs[0] is None:
            return None
        positional, keyword = _params(defs[0])
        returned = {r.value.id if isinstance(r.value, ast.Name) else None for r in _returns(defs[0])}
        param = returned.pop() if len(returned) == 1 else None
        if param is None or param not in (*positional, *keyword) or param in self.scopes[id(defs[0])].values:
            return None
        return _argument(call, positional, param)

    def value(self, expr, scope: _Scope, depth: int) -> str | None:
        """The torch API whose object `expr` (evaluated in `scope`) is, else None."""
        if depth > _MAX_DEPTH:   # (`x = keep(x)` of a function returning its argument: a cycle)
            return None
        if isinstance(expr, ast.Call):
            while isinstance(expr.func, ast.Attribute) and expr.func.attr in self.returns_self \
                    and isinstance(expr.func.value, ast.Call):
                expr = expr.func.value
            name = ast_dotted(expr.func)
            if name is None:
                return None
            head, _, rest = name.partition(".")
            owner = _owner(scope, head)
            if owner is not None and owner.parent is not None:
                return None   # a local name, not an import of the file's top level
            q = self.imports.get(head)
            if q is not None and is_source(q):
                return f"{q}.{rest}" if rest else q
            passed = self._passed_through(name, expr)
            if passed is not None:   # `seeded(Net())` of a function returning what it is given
                return self.value(passed, scope, depth + 1)
            return self.project.get(name)
        if not isinstance(expr, ast.Name):
            return None
        owner = _owner(scope, expr.id)
        if owner is None:
            return None
        if expr.id in owner.params:
            func = owner.node
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or expr.id in owner.values:
                return None
            return self.param(func.name, expr.id, depth)
        values = owner.values.get(expr.id, [])
        if values.count(None) == owner.defined.get(expr.id, 0) and any(
                isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == expr.id for v in values):
            # `Net = Net(...)`: the class (defined or imported) is made into the object the name
            # holds from then on
            values = [v for v in values if v is not None]
        found = {None if v is None else self.value(v, owner, depth + 1) for v in values}
        return found.pop() if len(found) == 1 else None


class _PassedNames(_Analysis):
    """The same analysis, but a fact is the top-level name of the file every call passes
    (`train_step(G, D, opt_G, opt_D)`: `og` of `def train_step(gen, disc, og, od)` is `opt_G`)."""

    def value(self, expr, scope: _Scope, depth: int) -> str | None:
        if not isinstance(expr, ast.Name) or depth > _MAX_DEPTH:
            return None
        owner = _owner(scope, expr.id)
        if owner is None:
            return None
        if owner.parent is None:
            return expr.id
        func = owner.node
        if expr.id in owner.params and expr.id not in owner.values and \
                isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self.param(func.name, expr.id, depth)
        return None


def passed_names(tree: ast.Module, imports: Mapping[str, str],
                 plain_decorators: Iterable[str] = ()) -> dict[str, dict[str, str]]:
    """Function name -> {parameter -> the top-level name every call passes for it}, sound by the
    same refusals as argument_objects."""
    return _PassedNames(tree, imports, {}, frozenset(), frozenset(plain_decorators)).run()


def _unpacked(target, value) -> bool:
    """`a, b = x, y`: names bound one by one to the elements of a tuple or list literal."""
    return isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
        and len(target.elts) == len(value.elts) and all(isinstance(t, ast.Name) for t in target.elts) \
        and not any(isinstance(v, ast.Starred) for v in value.elts)


def _returns(node):
    """The return statements of a function (not of functions or classes nested in it); walked
    with a stack (a long expression nests deeper than Python's recursion limit)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        if isinstance(child, ast.Return):
            yield child
        elif not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.expr)):
            todo.extend(ast.iter_child_nodes(child))


def _owner(scope: _Scope | None, name: str) -> _Scope | None:
    """The scope whose binding of `name` a read in `scope` sees (class bodies are skipped for
    reads in nested functions, as Python does)."""
    first = scope
    while scope is not None:
        if (scope is first or not isinstance(scope.node, ast.ClassDef)) and scope.binds(name):
            return scope
        if name in scope.nonlocal_:
            return None   # `global x` / `nonlocal x`: assigned from more than one scope
        scope = scope.parent
    return None


def _argument(call: ast.Call, positional: list[str], param: str):
    """The expression a call passes for `param`, or None (not passed, or not knowable)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    if param in positional and positional.index(param) < len(call.args):
        return call.args[positional.index(param)]
    return next((k.value for k in call.keywords if k.arg == param), None)
