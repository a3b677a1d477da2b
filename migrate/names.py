"""Name resolution without libcst's (slow) scope metadata.

`import torch.nn as nn`, `from torch import nn, optim`, `import torch.nn.functional as F`,
`from torch.optim import Adam` all become bindings `alias -> qualified name`. Function and
lambda scopes that bind the same name (a parameter `torch`, a local `nn = ...`) shadow them.
"""
from __future__ import annotations

import ast as _ast
from dataclasses import dataclass, field

import libcst as cst

# Packages whose references the converter rewrites.
SOURCE_ROOTS = frozenset({"torch", "torchvision", "torchaudio", "torchtext"})


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` -> "a.b.c"; anything that is not a plain dotted name -> None."""
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


# what a call of a plain Python class makes (no torch base: a replay buffer, a learner): an object
# whose methods are the program's own, never Tensor or Module methods
PLAIN_OBJECT = "builtins.object"


def plain_classes(tree: _ast.Module | None, outside: set[str] = frozenset()) -> set[str]:
    """The file's classes that derive from nothing but `object` or other plain classes (of
    the file, or `outside`: plain classes of other project files as the file spells them)."""
    plain = set(outside)
    if tree is None:
        return plain
    classes = [n for n in _ast.walk(tree) if isinstance(n, _ast.ClassDef) and not n.keywords]
    changed = True
    while changed:
        changed = False
        for node in classes:
            if node.name not in plain and all(
                    (b := ast_dotted(base)) == "object" or b in plain for base in node.bases):
                plain.add(node.name)
                changed = True
    return plain


def ast_dotted(node: _ast.AST) -> str | None:
    """`dotted` for the standard library's ast nodes."""
    parts = []
    while isinstance(node, _ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, _ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def resolve(expr: cst.BaseExpression, imports: dict[str, str]) -> str | None:
    """The qualified name a dotted expression stands for through the file's import bindings
    (`nn.Linear` with `nn` -> torch.nn: "torch.nn.Linear"); None when its head is not imported."""
    name = dotted(expr)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    q = imports.get(head)
    return None if q is None else (f"{q}.{rest}" if rest else q)


def bound_name(imports: dict[str, str], qualname: str) -> str | None:
    """The name the file binds `qualname` to (`import torch as T`: "T"), or None."""
    return next((b for b, q in imports.items() if q == qualname), None)


# Whitespace, comments, punctuation, operators and literals: nodes that hold no name, call or
# statement (visitors that look for those skip them and their whitespace children)
TRIVIA_TYPES = frozenset({
    cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.Newline, cst.Comment,
    cst.EmptyLine, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual,
    cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.ImportStar,
    *(c for c in vars(cst).values() if isinstance(c, type) and issubclass(
        c, (cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp))),
})
_STATEMENT_TYPES: dict[type, bool] = {}


def is_statement_type(kind: type) -> bool:
    """issubclass(kind, cst.BaseStatement), cached: visitors ask it per node, and an ABC check
    is slow."""
    try:
        return _STATEMENT_TYPES[kind]
    except KeyError:
        _STATEMENT_TYPES[kind] = found = issubclass(kind, cst.BaseStatement)
        return found


class PathTransformer(cst.CSTTransformer):
    """A pass that visits only the nodes in `self.path` (ids of the nodes on the way to what it
    rewrites, found by a scan first): libcst rebuilds every visited node, and a rebuilt statement
    loses its original position for later diagnostics."""

    path: set[int] = frozenset()

    def follow(self, module: cst.Module, wanted) -> set[int]:
        """Scan `module` for the nodes `wanted(node, ancestors)` accepts (PathScan): the way to
        them becomes this pass's path; their ids are returned."""
        scan = PathScan(wanted)
        module.visit(scan)
        self.path = scan.path
        return scan.targets

    def on_visit(self, node) -> bool:
        return id(node) in self.path and super().on_visit(node)

    def on_leave(self, original, updated):
        if id(original) not in self.path:
            return updated
        result = super().on_leave(original, updated)
        if result is not original and isinstance(original, (cst.SimpleStatementLine, cst.BaseSmallStatement)) and \
                isinstance(result, cst.CSTNode) and result.deep_equals(original):
            return original   # rebuilt with nothing changed: the original node, with its position
        return result


def walk(node):
    """`node` and every node below it, depth first."""
    yield node
    for child in node.children:
        yield from walk(child)


class PathScan(cst.CSTVisitor):
    """The nodes `wanted(node, ancestors)` accepts (`targets`, ids; ancestors from the module
    down to the node itself) and every node on the way to them (`path`, ids): what a
    PathTransformer visits."""

    def __init__(self, wanted) -> None:
        super().__init__()
        self.wanted = wanted
        self.stack: list = []
        self.targets: set[int] = set()
        self.path: set[int] = set()

    def on_visit(self, node) -> bool:
        self.stack.append(node)
        if self.wanted(node, self.stack):
            self.targets.add(id(node))
            self.path.update(map(id, self.stack))
        return True

    def on_leave(self, node) -> None:
        self.stack.pop()


class FocusedTransformer(cst.CSTTransformer):
    """A pass that visits only the statements `self.wants` (statement -> bool) accepts and hands
    back the original node wherever it rewrote nothing below it, so that untouched code keeps its
    identity and, with it, its original position for later diagnostics. Subclasses count their
    rewrites in `self.changes`."""

    def __init__(self, wants=lambda stmt: True) -> None:
        super().__init__()
        self.wants = wants
        self.changes = 0
        self._marks: list[int] = []

    def on_visit(self, node) -> bool:
        self._marks.append(self.changes)   # on_leave runs for skipped nodes too
        kind = type(node)
        if kind in TRIVIA_TYPES or (is_statement_type(kind) and not self.wants(node)):
            return False
        return super().on_visit(node)

    def on_leave(self, original, updated):
        result = super().on_leave(original, updated)
        if self._marks.pop() == self.changes:
            return original   # nothing rewritten below: the original node, with its position
        return result


class TargetBindings(cst.CSTVisitor):
    """Calls `self._bind(target, value)` for every statement that binds names: an assignment
    with the assigned value (whatever its target: `_bind` takes tuples apart), and with None the
    targets of `+=`, for loops and comprehensions, `with ... as`, `:=` and `except ... as`."""

    def _bind(self, target, value) -> None:
        raise NotImplementedError

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(t.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, None)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind(node.name.name, None)


def bound_names(target) -> list[str]:
    """The names an assignment or loop target binds (`a`, `a, (b, c)`, `*d`); attributes and
    subscripts none."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in bound_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return bound_names(target.value)
    return []


class ModuleRebinds(TargetBindings):
    """Module-level names the program binds again while it runs: inside a top-level loop (the
    epoch loop's `beta = ...`, `lr *= 0.5`) or in a function declaring them `global`. A compiled
    function reading one keeps the value it saw when compiled, so it must be passed in. (Names
    bound twice in straight-line code hold their last value before any loop runs a step.)"""

    def __init__(self) -> None:
        super().__init__()
        self.rebound: set[str] = set()
        self._loops = 0
        self._globals: list[set[str]] = []   # per enclosing function: its `global` names

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._globals.append({n.name.value for s in walk(node.body) if isinstance(s, cst.Global) for n in s.names})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._globals.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._globals.append(set())

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._globals.pop()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_For(self, node: cst.For) -> None:
        self._loops += 1
        super().visit_For(node)

    def leave_For(self, node: cst.For) -> None:
        self._loops -= 1

    def visit_While(self, node: cst.While) -> None:
        self._loops += 1

    def leave_While(self, node: cst.While) -> None:
        self._loops -= 1

    def visit_CompFor(self, node: cst.CompFor) -> None:
        pass   # a comprehension's own names

    def _bind(self, target, value) -> None:
        if self._globals[-1] if self._globals else self._loops:
            self.rebound.update(n for n in bound_names(target) if not self._globals or n in self._globals[-1])


class Bindings(TargetBindings):
    """Names (dotted: `device`, `self.device`) a file binds only to values `wanted(value)`
    accepts (`chosen`), and names bound to anything else (assignments, loop and with targets:
    `others`); a name in both is neither."""

    def __init__(self, wanted) -> None:
        super().__init__()
        self.wanted = wanted
        self.chosen: set[str] = set()
        self.others: set[str] = set()

    @property
    def only_chosen(self) -> set[str]:
        return self.chosen - self.others

    def _bind(self, target, value) -> None:
        name = dotted(target)
        if name is None:
            for element in getattr(target, "elements", ()):   # a, b = ...: not wanted
                self._bind(element.value, None)
            return
        (self.chosen if value is not None and self.wanted(value) else self.others).add(name)


def import_bindings(node: cst.Import | cst.ImportFrom) -> list[tuple[str, str]]:
    """The (bound name, qualified name) pairs an import statement creates."""
    out = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted(alias.name)
            if alias.asname is not None:
                out.append((alias.asname.name.value, full))
            else:  # `import torch.nn` binds `torch`
                root = full.split(".")[0]
                out.append((root, root))
    else:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return out
        module = dotted(node.module)
        for alias in node.names:
            name = alias.name.value
            bound = alias.asname.name.value if alias.asname is not None else name
            out.append((bound, f"{module}.{name}"))
    return out


def is_source(qualname: str | None) -> bool:
    return qualname is not None and qualname.split(".")[0] in SOURCE_ROOTS


class _BindingCollector(cst.CSTVisitor):
    """Names a function body binds, not descending into nested scopes."""

    def __init__(self) -> None:
        self.names: dict[str, str | None] = {}

    def _target(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            self.names[node.value] = None
        elif isinstance(node, (cst.Tuple, cst.List)):
            for el in node.elements:
                self._target(el.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._target(node.name.name)

    def visit_Import(self, node: cst.Import) -> bool:
        self.names.update(import_bindings(node))
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.names.update(import_bindings(node))
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names[node.name.value] = None
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names[node.name.value] = None
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.names.pop(item.name.value, None)


def params_of(params: cst.Parameters) -> list[str]:
    out = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star.name.value)
    return out


@dataclass
class Scope:
    kind: str  # module | class | function
    bindings: dict[str, str | None] = field(default_factory=dict)


class ScopeStack:
    """LEGB lookup over the scopes entered so far (class scopes are skipped from nested functions)."""

    def __init__(self, module_bindings: dict[str, str | None]) -> None:
        self.stack = [Scope("module", module_bindings)]

    def push_function(self, node: cst.FunctionDef | cst.Lambda, known: dict | None = None) -> None:
        """`known`: the bindings precomputed by `analyze_source`, when the node has a position."""
        if known is not None:
            bindings = dict(known)
        else:
            bindings = {n: None for n in params_of(node.params)}
            if isinstance(node, cst.FunctionDef):
                collector = _BindingCollector()
                node.body.visit(collector)
                bindings.update(collector.names)
        self.stack.append(Scope("function", bindings))

    def push_class(self, node: cst.ClassDef, known: dict | None = None) -> None:
        if known is None:
            collector = _BindingCollector()
            node.body.visit(collector)
            known = collector.names
        self.stack.append(Scope("class", dict(known)))

    def pop(self) -> None:
        self.stack.pop()

    def resolve_name(self, name: str) -> str | None:
        innermost = len(self.stack) - 1
        for i in range(innermost, -1, -1):
            scope = self.stack[i]
            if scope.kind == "class" and i != innermost:
                continue
            if name in scope.bindings:
                return scope.bindings[name]
        return None

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Qualified name of a dotted expression rooted at an imported name, else None."""
        name = dotted(expr)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        target = self.resolve_name(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target


class _AllBindings(_BindingCollector):
    """Every name bound anywhere in the module, nested scopes included."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names[node.name.value] = None
        for p in params_of(node.params):
            self.names[p] = None
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names[node.name.value] = None
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        for p in params_of(node.params):
            self.names[p] = None
        return True

    def visit_Global(self, node: cst.Global) -> None:
        pass


def module_imports(module: cst.Module) -> dict[str, str]:
    """Bindings made by top-level import statements (also inside top-level if/try blocks)."""
    out: dict[str, str] = {}

    class _Top(cst.CSTVisitor):
        def visit_FunctionDef(self, node) -> bool:
            return False

        def visit_ClassDef(self, node) -> bool:
            return False

        def visit_Import(self, node) -> bool:
            out.update(import_bindings(node))
            return False

        visit_ImportFrom = visit_Import

    module.visit(_Top())
    return out


def taken_names(module: cst.Module) -> set[str]:
    """Names the file binds other than through torch imports: a new alias must avoid them."""
    collector = _AllBindings()
    module.visit(collector)
    return {name for name, qual in collector.names.items() if not is_source(qual)}


def fresh_name(base: str, taken: set[str], first: int = 1) -> str:
    """`base`, else `base_<n>` for the first n from `first` that `taken` does not hold (the
    caller reserves it, where later names must differ from it)."""
    name, n = base, first
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


# ---------------------------------------------------------------------------------------
# The same facts from the stdlib `ast`, an order of magnitude cheaper than a libcst visit.
# ---------------------------------------------------------------------------------------


@dataclass
class SourceNames:
    imports: dict[str, str]                               # top-level import bindings
    taken: set[str]                                       # names bound other than by torch imports
    scopes: dict[tuple[int, int], dict[str, str | None]]  # (line, col) of a def/class -> its bindings
    tree: _ast.Module | None = None                       # the parsed module (None: ast rejected it)
    classes: set[str] = field(default_factory=set)        # names of the classes the file defines
    # (first line, last line, target names) of assignments whose value is a call
    call_assignments: list[tuple[int, int, list[str]]] = field(default_factory=list)
    guarded: set[str] = field(default_factory=set)        # imported at top level only under an `if`
    source_aliases: set[str] | None = None                # names any torch import binds (None: unknown)

    def imports_source(self) -> bool:
        """Does the file import torch (or torchvision...) anywhere?"""
        return any(is_source(q) for q in self.imports.values()) or any(
            is_source(q) for scope in self.scopes.values() for q in scope.values() if q)


def _ast_import_bindings(node) -> list[tuple[str, str]]:
    out = []
    if isinstance(node, _ast.Import):
        for a in node.names:
            out.append((a.asname, a.name) if a.asname else (a.name.split(".")[0],) * 2)
    elif node.module and not node.level:
        for a in node.names:
            if a.name != "*":
                out.append((a.asname or a.name, f"{node.module}.{a.name}"))
    return out


def _ast_params(args: _ast.arguments) -> list[str]:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


_SCOPES = (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef, _ast.Lambda)
_COMPREHENSIONS = (_ast.ListComp, _ast.SetComp, _ast.DictComp, _ast.GeneratorExp)


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _push_children(stack: list, node, kind: type) -> None:
    """The child nodes of `node` onto `stack` (ast.iter_child_nodes without its per-field
    generator; `ctx` markers and non-node list items are left out)."""
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f != "ctx")
    for f in fields:
        value = getattr(node, f, None)
        if type(value) is list:
            stack.extend(v for v in value if isinstance(v, _ast.AST))
        elif isinstance(value, _ast.AST):
            stack.append(value)


def _scope_bindings(body: list) -> dict[str, str | None]:
    """Names a def/class body binds, not descending into nested scopes or comprehensions."""
    out: dict[str, str | None] = {}
    globals_: set[str] = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (_ast.Import, _ast.ImportFrom)):
            out.update(_ast_import_bindings(node))
            continue
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            out[node.name] = None
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, (_ast.Lambda, *_COMPREHENSIONS)):
            continue
        if isinstance(node, (_ast.Global, _ast.Nonlocal)):
            globals_.update(node.names)
        elif isinstance(node, _ast.Name) and isinstance(node.ctx, _ast.Store):
            out[node.id] = None
        elif isinstance(node, _ast.ExceptHandler) and node.name:
            out[node.name] = None
        _push_children(stack, node, type(node))
    for g in globals_:
        out.pop(g, None)
    return out


def analyze_source(source: str) -> SourceNames:
    tree = _ast.parse(source)
    imports: dict[str, str] = {}
    conditional, unconditional = set(), set()
    for node in tree.body:
        stack = [(node, False)]
        while stack:   # imports at the top level, also inside top-level if/try blocks
            n, under_if = stack.pop()
            if isinstance(n, (_ast.Import, _ast.ImportFrom)):
                bindings = _ast_import_bindings(n)
                imports.update(bindings)
                (conditional if under_if else unconditional).update(b for b, _ in bindings)
            elif isinstance(n, (_ast.If, _ast.Try, _ast.With)) or (
                    hasattr(_ast, "TryStar") and isinstance(n, _ast.TryStar)):
                stack.extend((c, under_if or isinstance(n, _ast.If)) for c in _ast.iter_child_nodes(n))
            elif isinstance(n, _ast.ExceptHandler):
                stack.extend((c, under_if) for c in n.body)
    taken: set[str] = set()
    scopes: dict[tuple[int, int], dict[str, str | None]] = {}
    classes: set[str] = set()
    call_assignments = []
    source_aliases: set[str] = set()
    stack: list = [tree]
    while stack:   # every node once (in no particular order), as ast.walk but cheaper
        node = stack.pop()
        kind = type(node)
        if kind is _ast.Name:
            if type(node.ctx) is _ast.Store:
                taken.add(node.id)
            continue   # no child nodes
        if kind is _ast.Assign and (type(node.value) is _ast.Call or (   # also `a, b = A(), B()`
                type(node.value) in (_ast.Tuple, _ast.List) and any(type(e) is _ast.Call for e in node.value.elts))):
            flat = [e for t in node.targets for e in (t.elts if isinstance(t, (_ast.Tuple, _ast.List)) else [t])]
            targets = [t.id if isinstance(t, _ast.Name) else t.attr for t in flat
                       if isinstance(t, (_ast.Name, _ast.Attribute))]
            call_assignments.append((node.lineno, node.end_lineno, targets))
        elif kind is _ast.FunctionDef or kind is _ast.AsyncFunctionDef:
            taken.add(node.name)
            params = _ast_params(node.args)
            taken.update(params)
            scopes[(node.lineno, node.col_offset)] = {**{p: None for p in params}, **_scope_bindings(node.body)}
        elif kind is _ast.ClassDef:
            taken.add(node.name)
            classes.add(node.name)
            scopes[(node.lineno, node.col_offset)] = _scope_bindings(node.body)
        elif kind is _ast.Lambda:
            taken.update(_ast_params(node.args))
        elif kind is _ast.Import or kind is _ast.ImportFrom:
            for b, q in _ast_import_bindings(node):
                (source_aliases if is_source(q) else taken).add(b)
        elif kind is _ast.ExceptHandler and node.name:
            taken.add(node.name)
        _push_children(stack, node, kind)
    return SourceNames(imports, taken, scopes, tree, classes, call_assignments, conditional - unconditional,
                       source_aliases=source_aliases)
