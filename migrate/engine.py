"""The converter: parse -> rewrite torch references through the mapping tables -> imports -> code.

The engine knows no API. For every reference that resolves to a torch name it looks up the
record in `rules/api/*.toml` and applies it: arguments are bound to the torch signature, value
transforms, renames, drops and pinned defaults applied, and the call re-targeted; irregular APIs
name a function in `rules/transforms/` that gets a `Site`. What cannot be converted faithfully is
left runnable where possible and marked with a `# msmigrate: CODE message` comment.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as cstm
from libcst.helpers import parse_template_expression, parse_template_statement

from msmigrate.arguments import argument_objects, returned_objects
from msmigrate.diagnostics import AUTO, CONVERT_CODES, STATUS_CODE, STATUSES, Diagnostic, InputError
from msmigrate.foreign import foreign_receivers
from msmigrate.imports import ImportPlan
from msmigrate.mapping import ApiRecord, ApiTable, load_table, transform_function
from msmigrate.names import (PLAIN_OBJECT, SOURCE_ROOTS, ScopeStack, SourceNames, TargetBindings, analyze_source, dotted,
                             plain_classes, TRIVIA_TYPES, is_source, is_statement_type, module_imports, params_of,
                             fresh_name, resolve, taken_names, walk)
from msmigrate.sourcemap import Focus, Positions, SourceMap
from msmigrate.compile_check import uncompile_unsound_steps
from msmigrate.torch_left import stop_at_top

MARKER = "# msmigrate:"
REMOVED_NAME = "__msmigrate_removed__"
_SOURCE_HINT = re.compile(r"\btorch")
_SOURCE_IMPORT_LINE = (r"(?:^|[:;])[ \t]*(?:from[ \t]+(?:{0})\b|import[ \t][^\n#;]*\b(?:{0})\b"
                       r"|(?:from|import)[ \t][^\n#]*\\$)").format("|".join(sorted(SOURCE_ROOTS)))


@dataclass(frozen=True)
class Conversion:
    api: str
    target: str
    status: str
    line: int
    col: int


@dataclass
class ConversionResult:
    path: str
    source: str
    code: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    conversions: list[Conversion] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.code != self.source

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "changed": self.changed,
            "conversions": [c.__dict__ for c in self.conversions],
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def convert_source(source: str, path: str = "<string>", *, force: bool = False,
                   table: ApiTable | None = None,
                   project: Mapping[str, str] | None = None,
                   project_classes: Mapping[str, str] | None = None) -> ConversionResult:
    """Convert one file's text. Files that never mention torch come back untouched (unless
    `force`). Raises InputError for code that does not parse.

    `project`: names this file uses that are defined in other files of the same project (or
    are its own functions), as the file spells them (`Net`, `helpers.make_optimizer`) -> the
    torch API whose object calling them creates (`torch.nn.Module` for a class deriving from
    it, `torch.optim.SGD` for a factory returning one). `project_classes`: the source of the
    classes among them (name -> `class ...:` code), for transforms that read a class body.
    See msmigrate.project."""
    project = dict(project or {})
    force = force or bool(project)   # a file using torch objects made elsewhere needs no torch import
    if not force and not _SOURCE_HINT.search(source):
        return ConversionResult(path, source, source)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise InputError(path, f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1,
                         "MSC001") from None
    try:
        names = analyze_source(source)
    except SyntaxError:  # libcst accepts a few things ast does not: derive the facts from the CST
        names = SourceNames(module_imports(module), taken_names(module), {})
    if not force and not names.imports_source():
        return ConversionResult(path, source, source)   # mentions torch, imports none of it
    # Positions of original nodes, computed when a diagnostic or conversion needs one; later
    # passes reuse unchanged subtrees, so their nodes still find their original line and column.
    source_map = SourceMap(module, names.tree, source)
    positions = Positions(module, source, source_map)
    plan = ImportPlan(names.imports, names.taken, names.guarded)
    # lines that import torch (`from torch... import`, `import ... torch...`)
    plan.may_import = Focus(source, source_map, (), (), _SOURCE_IMPORT_LINE).wants
    plan.source_aliases = names.source_aliases
    plan.source_text, plan.source_names = source_map.top_level_text, source_map.top_level_names
    plan.stand_ins = source_map.with_verbatim
    plan.source_tree = names.tree
    ctx = FileContext(path, source, module, plan, Reporter(path),
                      positions, names, project, dict(project_classes or {}), source_map)
    # project classes without a torch fact are plain ones (msmigrate.project.class_origins)
    ctx.plain_classes = plain_classes(names.tree, {n for n in ctx.project_classes if n not in ctx.project})
    if names.tree is not None:
        from msmigrate.rules import PLAIN_DECORATORS

        facts = {**{c: PLAIN_OBJECT for c in ctx.plain_classes}, **ctx.project}
        ctx.arguments = argument_objects(names.tree, names.imports, facts, _RETURNS_SELF, PLAIN_DECORATORS)
        ctx.returned = returned_objects(names.tree, names.imports, facts, _RETURNS_SELF, PLAIN_DECORATORS)
    for structural_pass in structural_passes():
        if structural_pass.applies(source):
            ctx.module = ctx.module.visit(structural_pass(ctx))
    from msmigrate.rules import ARRAY_LIBRARIES
    ctx.foreign, ctx.numpy_indices = foreign_receivers(ctx.module, names.imports, ARRAY_LIBRARIES, source)
    table = table or load_table()
    rewriter = Rewriter(ctx, table, _focus(ctx, source_map, table))
    new_module = ctx.plan.apply(ctx.module.visit(rewriter))
    code, uncompiled = uncompile_unsound_steps(ctx.plan.code(new_module), source, path)
    code, stop = stop_at_top(code, ctx.reporter.diagnostics, path, ctx.reporter.stops)
    diagnostics = ctx.reporter.diagnostics + uncompiled + ([stop] if stop else [])
    return ConversionResult(path, source, code, sorted(diagnostics), ctx.reporter.conversions)


@dataclass
class FileContext:
    """What every pass over one file shares."""
    path: str
    source: str
    module: cst.Module
    plan: ImportPlan
    reporter: "Reporter"
    positions: Mapping          # original node -> CodeRange (nodes a pass rebuilt have none)
    names: SourceNames
    project: dict = field(default_factory=dict)   # name -> torch API its call creates (see convert_source)
    project_classes: dict = field(default_factory=dict)   # name -> source of a class in another file

    source_map: SourceMap | None = None
    not_tensors: set = field(default_factory=set)   # names a pass knows hold no Tensor (their .backward(x) is no Tensor.backward)
    # function name -> {parameter -> torch API of the object every call passes} (msmigrate.arguments)
    arguments: dict = field(default_factory=dict)
    # function name -> torch API of the object its returns give, or a tuple of them (msmigrate.arguments)
    returned: dict = field(default_factory=dict)
    plain_classes: set = field(default_factory=set)   # classes of plain Python objects (names.plain_classes)
    recomputed: set = field(default_factory=set)   # containers of kept values a step computes again (a pass says)
    # generated functions computing a gradient torch holds as a constant (an input's .grad after
    # loss.backward(), rules/tape_grad.py): data for a training step, computed before it
    input_gradients: set = field(default_factory=set)
    # ids of receivers holding another array library's value (msmigrate.foreign): not tensors
    foreign: set = field(default_factory=set)
    # ids of NumPy scalars indexing another value (`mask[i, p[0]]`): made Python ints
    numpy_indices: set = field(default_factory=set)

    def statements_naming(self, words) -> Callable[[cst.CSTNode], bool]:
        """A test for original statements: False only when none of `words` occurs as an
        identifier on the source lines the statement spans (for passes that scan the module)."""
        if self.source_map is None:
            return lambda stmt: True
        return Focus(self.source, self.source_map, words, ()).wants

    def known_scope(self, node) -> dict | None:
        """Precomputed bindings of a def/class that still has its original position."""
        pos = self.positions.get(node)
        return self.names.scopes.get((pos.start.line, pos.start.column)) if pos is not None else None


def _focus(ctx: FileContext, source_map: SourceMap, table: ApiTable) -> Focus:
    """The identifiers that make a statement worth visiting: names bound to torch imports in
    any scope, method names of the tables, the file's classes and the names the project maps,
    then the names assigned from calls in those statements (objects with call-site rules)."""
    names = ctx.names
    words = {b for b, q in names.imports.items() if is_source(q)}
    words |= {b for scope in names.scopes.values() for b, q in scope.items() if is_source(q)}
    words |= names.classes
    words |= {part for key in ctx.project for part in key.split(".")}
    words |= {p for params in ctx.arguments.values() for p in params}   # objects passed in
    methods = {**table.passthrough, **table.by_method}   # every method name with a record
    operators = "|".join(re.escape(token) for token, dunder in _UNARY_TOKENS.items()
                         if table.lookup(f"torch.Tensor.{dunder}") is not None) or None
    focus = Focus(ctx.source, source_map, words, methods, operators)
    assigned = {n for first, last, targets in names.call_assignments
                if focus.hits_between(first, last) for n in targets}
    if assigned - words:
        focus = Focus(ctx.source, source_map, words | assigned, methods, operators)
    return focus


def structural_passes() -> list:
    """Multi-statement rewrites that run before the table-driven pass, on torch names
    (declared by the rules package, so the engine stays API-free)."""
    import importlib

    from msmigrate.rules import STRUCTURAL_PASSES

    out = []
    for ref in STRUCTURAL_PASSES:
        module, _, name = ref.partition(":")
        out.append(getattr(importlib.import_module(module), name))
    return out


class Reporter:
    """Collects diagnostics and conversions of one file; returns the marker comment text."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.diagnostics: list[Diagnostic] = []
        self.conversions: list[Conversion] = []
        # markers of code left for manual work (e.g. a training step left as torch calls
        # zero_grad/backward/step on MindSpore objects): the file stops at its top for these as
        # for torch uses left (msmigrate.torch_left)
        self.stops: list[str] = []

    def flag(self, status_or_code: str, message: str, line: int, col: int) -> str:
        if status_or_code in STATUSES:
            status, code = status_or_code, STATUS_CODE.get(status_or_code, "MSC101")
        else:
            code = status_or_code
            status = {"MSC104": "manual", "MSC105": "review", "MSC106": "review",
                      "MSC107": "manual"}.get(code, "review")
        message = " ".join(message.split())
        severity = "warning" if status == "review" else "error"
        self.diagnostics.append(Diagnostic(self.path, line, col, code, message, severity, False, status))
        marker = f"{MARKER} {code} {message}"
        if status != "review":   # left for manual work: the program must not run before it is done
            self.stops.append(marker)
        return marker


# --------------------------------------------------------------------------------------
# What a transform function sees
# --------------------------------------------------------------------------------------

class Unconvertible(Exception):
    """Raised by a transform: leave the reference as torch and flag it with this message."""

    def __init__(self, message: str, status: str = "manual") -> None:
        super().__init__(message)
        self.status = status


class NotLiteral(Unconvertible, ValueError):
    """An argument a transform needs as a literal is an expression. Transforms may catch it
    (as ValueError) to handle the general case; uncaught, the reference is flagged."""


class Site:
    """One reference to a torch API being converted (a call, a bare reference, a class base)."""

    def __init__(self, rw: "Rewriter", record: ApiRecord, qualname: str, node: cst.CSTNode,
                 receiver: cst.BaseExpression | None = None, instance: ApiRecord | None = None) -> None:
        self.rw = rw
        self.instance = instance    # the record that made the receiver, where it is known
        self.record = record
        self.qualname = qualname
        self.node = node            # updated node: cst.Call for calls, the reference otherwise
        self.receiver = receiver    # `x` in `x.view(...)` for method records
        self.original_receiver = receiver   # the receiver as torch code (before its conversion)
        self.is_call = isinstance(node, cst.Call)
        self.bound, self.unbound = (_bind(record, node.args) if isinstance(node, cst.Call)
                                    else ({}, []))
        self.REMOVED = cst.Name(REMOVED_NAME)
        self.result_dtype: cst.BaseExpression | None = None   # cast of the result (compute_as)
        self.uncast: dict[str, cst.BaseExpression] = {}   # arguments as they were before a dtype cast
        self.wraps: list = []   # functions of the converted value: what PROMOTE added, taken off again

    # arguments ---------------------------------------------------------------------
    def arg(self, name: str, default: cst.BaseExpression | None = None):
        a = self.bound.get(name)
        return a.value if a is not None else default

    def has(self, name: str) -> bool:
        return name in self.bound

    def literal(self, name: str, default=None):
        """The Python value of a literal argument; `default` when absent; raises ValueError
        when present but not a literal."""
        if name not in self.bound:
            return default
        try:
            return literal_value(self.bound[name].value)
        except ValueError:
            raise NotLiteral(f"{name}={self.code(self.bound[name].value)} is not a literal") from None

    # building code -----------------------------------------------------------------
    def ref(self, qualname: str) -> cst.BaseExpression:
        return self.rw.imports.ref(qualname)

    def expr(self, template: str, **nodes) -> cst.BaseExpression:
        nodes = {k: (self.ref(v[1:]) if isinstance(v, str) and v.startswith("@") else v)
                 for k, v in nodes.items()}
        if any(v is None for v in nodes.values()):   # the API used as a value, or an argument missing
            raise Unconvertible("used without the arguments its conversion needs (not called here, "
                                "or an argument is missing): convert this use by hand")
        base = f"{(self.qualname or 'value').rsplit('.', 1)[-1]}_input"   # `normalize_input`
        named, bound = _computed_once(nodes, template, lambda: self.fresh(base))
        if bound and self._before_is_first():
            # the value computed once, by a statement of its own before this one (not `:=`,
            # which MindSpore's graphs reject, nor a lambda, which they run to None in a loop)
            for name, value in bound.items():
                self.before(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)]))
            nodes = named
        elif bound:
            self.flag("review", f"{self.qualname}: its conversion computes "
                                f"{', '.join(self.code(v) for v in bound.values())} twice (a random draw there "
                                f"would draw twice): compute it into a name first")
        for key in _PRIMARY_SLOT.findall(template):   # `{x}.attr`, `{x}[i]`, `{x}(...)`
            if key in nodes:
                nodes[key] = _primary(nodes[key])
        return parse_template_expression(template, self.rw.config, **nodes)

    def fresh(self, base: str) -> str:
        """`base`, or `base_<n>`: a name neither the file nor an earlier conversion of it uses
        (reserved: the next one asking gets another)."""
        name = fresh_name(base, self.rw.imports.taken)
        self.rw.imports.taken.add(name)
        return name

    def _before_is_first(self) -> bool:
        """Whether a statement put before this one runs exactly when, and just before, the call
        converted now would: the call is in a simple statement, not under a lambda, a
        comprehension, a conditional expression or a short-circuit operator."""
        stmt, call = self.statement, self.rw.original_call
        if not isinstance(stmt, cst.SimpleStatementLine) or call is None:
            return False
        deferred = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp,
                    cst.BooleanOperation)
        return not any(isinstance(n, deferred) and any(m is call for m in walk(n)) for n in walk(stmt))

    def stmt(self, template: str, **nodes) -> cst.BaseStatement:
        return parse_template_statement(template, self.rw.config, **nodes)

    def code(self, node: cst.CSTNode) -> str:
        return self.rw.module.code_for_node(node)

    def standard_args(self, skip: tuple[str, ...] = ()) -> list[cst.Arg]:
        return _standard_args(self, skip)

    def call(self, target: str | cst.BaseExpression, args: list[cst.Arg] | None = None) -> cst.Call:
        """A call of `target` (a MindSpore qualname or an expression) with the standard
        argument conversion (or `args`), keeping the original call's formatting."""
        func = self.ref(target) if isinstance(target, str) else target
        args = self.standard_args() if args is None else args
        if isinstance(self.node, cst.Call):
            return self.node.with_changes(func=func, args=_respace(self.node.args, args))
        return cst.Call(func=func, args=args)

    # reporting and statements ------------------------------------------------------
    def flag(self, status_or_code: str, message: str, stop: bool = False) -> None:
        self.rw.flag(status_or_code, message, stop)

    def after(self, stmt: cst.BaseStatement | str, implicit: bool = False) -> None:
        self.rw.add_statement(stmt, after=True, implicit=implicit)

    def before(self, stmt: cst.BaseStatement | str) -> None:
        self.rw.add_statement(stmt, after=False)

    @property
    def statement(self) -> cst.BaseStatement | None:
        """The statement this reference stands in, as it was before conversion."""
        return self.rw.frames[-1].node if self.rw.frames else None

    @property
    def assigned_name(self) -> str | None:
        """`name` (or `self.name`) when the statement is a single assignment `name = ...`."""
        stmt = self.statement
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                return dotted(small.targets[0].target)
        return None

    def instance_record(self, expr: cst.BaseExpression) -> ApiRecord | None:
        """The record of the API that created the object `expr` names, if known."""
        name = dotted(expr)
        return self.rw.instances.get(name) if name else None


_PRIMARY_SLOT = re.compile(r"\{(\w+)\}[.\[(]")
_PRIMARIES = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.List, cst.Dict)


def _computed_once(nodes: dict, template: str, fresh) -> tuple[dict, dict]:
    """A value a call computes placed more than once by a template (`{x} / norm({x})` for
    `F.normalize(self.drop(h))`) would be computed again, a second dropout or random draw (silently
    another result): each such value gets a name (`fresh()`). Returns the slots with those names
    in their places, and {name: value} (empty when nothing is placed twice)."""
    uses = {k: template.count("{" + k + "}") for k in nodes}
    groups: dict[str, list[str]] = {}
    for key, value in nodes.items():
        if uses[key] and isinstance(value, cst.BaseExpression) and any(
                isinstance(n, (cst.Await, cst.Yield, cst.NamedExpr)) or
                (isinstance(n, cst.Call) and dotted(n.func) not in _PURE_BUILTINS) for n in walk(value)):
            code = _BARE.code_for_node(value.with_changes(lpar=[], rpar=[]))
            groups.setdefault(code, []).append(key)
    bound = {}
    for code, keys in groups.items():
        if sum(uses[k] for k in keys) > 1:
            name = fresh()
            bound[name] = nodes[keys[0]]
            nodes = {**nodes, **{key: cst.Name(name) for key in keys}}
    return nodes, bound


def _element_name(expr) -> str | None:
    """`criteria["cls"]` / `losses[0]` (a dotted name subscripted by a string or integer literal)
    -> "criteria['cls']" / "losses[0]", the name its element is known by (_bind_elements)."""
    if not (isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)):
        return None
    base, key = dotted(expr.value), _element_key(expr.slice[0].slice.value)
    return f"{base}{key}" if base is not None and key is not None else None


def _element_key(key) -> str | None:
    """`"cls"` -> "['cls']", `0` -> "[0]": a string or integer literal as the subscript part of
    an element's name; None for any other key."""
    return f"[{key.evaluated_value!r}]" if isinstance(key, (cst.SimpleString, cst.Integer)) else None


_BARE = cst.Module([])
_PURE_BUILTINS = {"isinstance", "getattr", "hasattr", "len", "type", "int", "float", "bool", "str", "tuple"}


def _primary(node: cst.BaseExpression) -> cst.BaseExpression:
    """`node` parenthesised where it is followed by `.attr`, `[i]` or `(...)` in a template:
    `a + b` -> `(a + b).astype(...)`, `1` -> `(1).astype(...)` (`1.astype` does not parse)."""
    if not isinstance(node, cst.BaseExpression) or isinstance(node, _PRIMARIES) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


# Where a rewritten child expression may bind looser than its position allows
_OPERAND_FIELDS = {cst.Attribute: ("value",), cst.Subscript: ("value",), cst.Call: ("func",),
                   cst.BinaryOperation: ("left", "right"), cst.UnaryOperation: ("expression",),
                   cst.BooleanOperation: ("left", "right"), cst.Comparison: ("left",),
                   cst.ComparisonTarget: ("comparator",)}
_BINARY_PRECEDENCE = {cst.BitOr: 5, cst.BitXor: 6, cst.BitAnd: 7, cst.LeftShift: 8, cst.RightShift: 8,
                      cst.Add: 9, cst.Subtract: 9, cst.Multiply: 10, cst.Divide: 10, cst.FloorDivide: 10,
                      cst.Modulo: 10, cst.MatrixMultiply: 10, cst.Power: 12}


def _precedence(node) -> int:
    """Python's operator precedence (higher binds tighter); primaries are 13."""
    if isinstance(node, cst.BinaryOperation):
        return _BINARY_PRECEDENCE.get(type(node.operator), 0)
    if isinstance(node, cst.UnaryOperation):
        return 3 if isinstance(node.operator, cst.Not) else 11
    if isinstance(node, cst.BooleanOperation):
        return 2 if isinstance(node.operator, cst.And) else 1
    if isinstance(node, cst.Comparison):
        return 4
    if isinstance(node, (cst.IfExp, cst.Lambda, cst.NamedExpr, cst.Yield, cst.Await)):
        return 0
    return 13


def _parenthesise_operands(original, updated):
    """`t.uniform_(a, b).mul_(2)` -> `(rand_like(t) * w + a).mul(2)`, not `... + a.mul(2)`: a
    replacement that binds looser than its position (operand, receiver) gets parentheses."""
    changes = {}
    for name in _OPERAND_FIELDS[type(updated)]:
        new, old = getattr(updated, name), getattr(original, name)
        if type(new) is type(old) or new.lpar:   # rebuilt around changed children: as written
            continue
        child = _precedence(new)
        if name in ("value", "func"):
            loose = child < 13 or isinstance(new, cst.Integer)    # `1.astype` does not parse
        elif isinstance(updated, (cst.Comparison, cst.ComparisonTarget)):
            loose = child <= 4
        else:
            parent = _precedence(updated)
            loose = child < parent or (child == parent and name == "right")
        if loose:
            changes[name] = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return updated.with_changes(**changes) if changes else updated


def creates_cell(rec: ApiRecord) -> bool:
    """A torch.nn class whose objects are Modules: not what F.softmax(...) returns, nor a
    Parameter (a tensor)."""
    last = rec.torch.rsplit(".", 1)[-1]
    return rec.torch.startswith("torch.nn.") and last[:1].isupper() and last not in (
        "Parameter", "UninitializedParameter", "Buffer", "UninitializedBuffer")


def literal_value(node: cst.BaseExpression):
    code = cst.Module([]).code_for_node(node)
    return ast.literal_eval(code)


def kwarg(name: str, value: cst.BaseExpression, like: cst.Arg | None = None) -> cst.Arg:
    eq = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                         whitespace_after=cst.SimpleWhitespace(""))
    if like is not None and like.keyword is not None:
        return like.with_changes(keyword=cst.Name(name), value=value)
    comma = like.comma if like is not None else cst.MaybeSentinel.DEFAULT
    return cst.Arg(value=value, keyword=cst.Name(name), equal=eq, comma=comma)


def _bind(record: ApiRecord, args) -> tuple[dict[str, cst.Arg], list[cst.Arg]]:
    """Map a call's arguments onto the torch signature: name -> Arg (positional ones keep
    `keyword=None`). Arguments that cannot be bound (`*a`, `**k`, too many) are `unbound`."""
    bound: dict[str, cst.Arg] = {}
    unbound: list[cst.Arg] = []
    # positionals after `*xs` have unknown positions: they stay unbound, in their place
    first_star = next((k for k, a in enumerate(args) if a.star == "*"), len(args))
    positional = [a for a in args[:first_star] if a.keyword is None and a.star == ""]
    pos_params = []
    for a in record.args:
        if a == "*":
            break
        pos_params.append(a)
        if a.startswith("*"):
            break
    i = 0
    for param in pos_params:
        if i >= len(positional):
            break
        if param.startswith("*"):
            rest = positional[i:]
            if len(rest) == 1:
                bound[param[1:]] = rest[0]
            else:
                elts = [cst.Element(a.value) for a in rest]
                bound[param[1:]] = rest[0].with_changes(value=cst.Tuple(elts), comma=rest[-1].comma)
            i = len(positional)
            break
        bound[param] = positional[i]
        i += 1
    if not record.args:
        unbound.extend(positional)
    else:
        unbound.extend(positional[i:])
    known = {p.lstrip("*") for p in record.args}
    for k, a in enumerate(args):
        if a.star or (a.keyword is None and k > first_star):
            unbound.append(a)
        elif a.keyword is not None:
            name = a.keyword.value
            # torch's bindings name a function's first tensor `input` (`self` in the schema)
            # whatever its documented name: F.one_hot(input=x), x.gt(input=...) is not torch's
            if name == "input" and pos_params and "input" not in pos_params \
                    and not pos_params[0].startswith("*") and pos_params[0] not in bound \
                    and not record.is_method:
                name = pos_params[0]
            alias = _NUMPY_NAMES.get(name)
            if alias is not None and name not in known and alias in known and alias not in bound:
                # torch's argument parser takes NumPy's names too: sum(x, axis=1, keepdims=True)
                name, a = alias, a.with_changes(keyword=cst.Name(alias))
            bound[name] = a
    return bound, unbound


# the keyword names torch's argument parser accepts for its own (numpy_compatibility_arg_names)
_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim", "x1": "input", "x2": "other"}


def _torch_keywords(call: cst.Call) -> cst.Call:
    """The call with NumPy's keyword names for torch's own (axis= -> dim=, keepdims= -> keepdim=)."""
    return call.with_changes(args=[a.with_changes(keyword=cst.Name(_NUMPY_NAMES[a.keyword.value]))
                                   if a.keyword is not None and a.keyword.value in ("axis", "keepdims") else a
                                   for a in call.args])


class _TopLevelBindings(TargetBindings):
    """Every binding of a dotted name in the module's own code, also under its if/with/try/loop
    blocks, not in functions, classes or lambdas: its value, or None (not an assignment)."""

    def __init__(self) -> None:
        self.values: dict[str, list] = {}

    def _bind(self, target, value) -> None:
        for i, e in enumerate(getattr(target, "elements", ())):   # a, b = ...: (value, index)
            self._bind(e.value, (value, i) if isinstance(value, cst.Call) else None)
        name = dotted(target)
        if name is not None:
            self.values.setdefault(name, []).append(value)

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_Lambda(self, node) -> bool:
        return False



def returned_bindings(returned: Mapping[str, object], scopes, assign: cst.Assign) -> list[tuple[str, str]]:
    """(name, torch API) of each name `a, b = build(m)` / `c = make_loss()` binds to an object
    the file's own function returns (FileContext.returned; `scopes` tells the call is to it)."""
    call = assign.value
    made = returned.get(call.func.value) if isinstance(call, cst.Call) and \
        isinstance(call.func, cst.Name) and scopes.resolve(call.func) is None else None
    if made is None or len(assign.targets) != 1:
        return []
    target = assign.targets[0].target
    if isinstance(made, str):
        pairs = [(target, made)]
    elif isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(made) and \
            not any(isinstance(e, cst.StarredElement) for e in target.elements):
        pairs = [(e.value, q) for e, q in zip(target.elements, made)]
    else:
        return []
    return [(dotted(node), q) for node, q in pairs if dotted(node) is not None and q]

def _late_instances(module: cst.Module, imports: Mapping[str, str], table: ApiTable,
                    returned: Mapping[str, object]) -> dict[str, ApiRecord]:
    """Names bound once in the module's own code (also under its if/with/try blocks), to a
    torch object whose calls have call-site rules (`criterion = nn.CrossEntropyLoss()`), also
    one a function of the file returns (`criterion = make_loss()`, `opt, sched = build(m)`:
    FileContext.returned)."""
    bindings = _TopLevelBindings()
    module.visit(bindings)
    out = {}
    for name, values in bindings.values.items():
        if "." in name or len(values) != 1:
            continue
        value, index = values[0] if isinstance(values[0], tuple) else (values[0], None)
        if not isinstance(value, cst.Call):
            continue
        q = resolve(value.func, dict(imports))
        if not is_source(q):
            made = returned.get(value.func.value) if isinstance(value.func, cst.Name) and \
                value.func.value not in imports else None
            q = made if index is None and isinstance(made, str) else \
                made[index] if isinstance(made, tuple) and index is not None and index < len(made) else None
        elif index is not None:
            continue
        rec = table.lookup(q) if q and is_source(q) else None
        if rec is not None and rec.instance_call:
            out[name] = rec
    return out


def _binds(record: ApiRecord, args) -> bool:
    """Could this call be one of `record`'s API (its keywords are parameters of it, its
    positionals fit)? True where the record lists no signature or the call unpacks `*`/`**`."""
    if not record.args or any(a.star for a in args):
        return True
    names = {a.lstrip("*") for a in record.args if a != "*"}
    if any(a.startswith("**") for a in record.args):
        return True
    keywords = {a.keyword.value for a in args if a.keyword is not None}
    if keywords - names - {"input", "out"}:
        return False
    positional = [a for a in record.args if a != "*"]
    cut = record.args.index("*") if "*" in record.args else len(record.args)
    n_pos = sum(1 for a in args if a.keyword is None)
    return n_pos <= cut or any(a.startswith("*") and not a.startswith("**") for a in positional)


_QUALNAME_IN_PIN = re.compile(r"@([A-Za-z_][\w.]*)")


def _pin_expr(code: str, site: Site) -> cst.BaseExpression:
    """A pinned default's code; `@mindspore.x.Y` names a MindSpore object to import."""
    if "@" not in code:
        return cst.parse_expression(code)
    refs = {}

    def placeholder(m):
        key = f"ref{len(refs)}"
        refs[key] = site.ref(m.group(1))
        return "{" + key + "}"

    return parse_template_expression(_QUALNAME_IN_PIN.sub(placeholder, code), site.rw.config, **refs)


def _standard_args(site: Site, skip: tuple[str, ...] = ()) -> list[cst.Arg]:
    rec = site.record
    out: list[cst.Arg] = []
    still_positional = True
    positional_names: set[str] = set()   # MindSpore names of the arguments kept positional
    known = {a.lstrip("*") for a in rec.args}
    for index, (name, arg) in enumerate(site.bound.items()):
        if name in skip:
            still_positional = False
            continue
        if rec.args and name not in known:
            site.flag("MSC106", f"{site.qualname}: unknown argument {name!r} kept as is")
            out.append(arg)
            continue
        if name in rec.reject:
            allowed = rec.reject[name]
            try:
                ok = literal_value(arg.value) in [ast.literal_eval(v) for v in allowed]
            except ValueError:
                ok = False
            if not ok:
                site.flag("MSC105", f"{site.qualname}: {name}={site.code(arg.value)} has no MindSpore "
                                    f"equivalent (only {', '.join(allowed)}); argument dropped")
                still_positional = False
                continue
        if name in rec.review:
            site.flag("review", f"{site.qualname}: {name}= {rec.review[name]}")
        if name in rec.drop:
            still_positional = False
            continue
        value = arg.value
        if name in rec.values:
            result = transform_function(rec.values[name])(value, site)
            if result is None:
                still_positional = False
                continue
            if isinstance(result, dict):
                still_positional = False
                for k, v in result.items():
                    out.append(kwarg(k, v, arg))
                continue
            value = result
        ms_name = rec.rename.get(name, name)
        # a leading tensor given by keyword (`input=`, a loss function's `target=`), whose
        # MindSpore name varies (x, input_x, logits; labels): within the record's positional
        # ones, in its place, it is passed by position (`dim=` and the like keep their keyword)
        function = (rec.target or "").startswith("mindspore.ops.") and rec.target.rsplit(".", 1)[-1][:1].islower()
        by_keyword = (still_positional and arg.keyword is not None and index < rec.positional
                      and index < len(rec.args) and rec.args[index] == name and not rec.is_method
                      and ((index == 0 and name == "input") or (function and name == "target"
                                                                and name not in rec.rename))
                      and not any(a.startswith("*") for a in rec.args[:index + 1]))
        if by_keyword and not site.unbound:
            arg = arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
        if still_positional and arg.keyword is None and index < rec.positional:
            positional_names.add(ms_name)
            out.append(arg.with_changes(value=value))
        else:
            still_positional = False
            out.append(kwarg(ms_name, value, arg))
    after_star = set()
    for a in site.unbound:
        if a.star and (rec.args or rec.rename or rec.drop or rec.values):
            site.flag("MSC106", f"{site.qualname}: arguments passed through {a.star}{site.code(a.value)} "
                                f"are not converted (torch names and values reach MindSpore as they are)")
        elif not a.star and rec.args and not after_star:
            site.flag("MSC106", f"{site.qualname}: more positional arguments than the torch signature has")
        if a.star == "*" or after_star:
            after_star.add(id(a))
        out.append(a)
    present = {a.keyword.value for a in out if a.keyword is not None} | positional_names
    for ms_name, code in rec.pin.items():
        if ms_name not in present:
            out.append(kwarg(ms_name, _pin_expr(code, site)))
    # Python's order: positional, *args, keywords, **kwargs
    return sorted(out, key=lambda a: 3 if a.star == "**" else 2 if a.keyword is not None
                  else 1 if id(a) in after_star else 0)


def _respace(original: tuple, new: list[cst.Arg]) -> list[cst.Arg]:
    """Give a rebuilt argument list the comma style of the original (multi-line calls stay
    multi-line, a trailing comma stays trailing)."""
    if not new:
        return []
    new = list(new)
    last_comma = original[-1].comma if original else cst.MaybeSentinel.DEFAULT
    if len(original) >= 2 and isinstance(original[-2].comma, cst.Comma):
        sep = original[-2].comma
    elif isinstance(last_comma, cst.Comma):
        sep = last_comma
    else:
        sep = cst.MaybeSentinel.DEFAULT
    multiline = isinstance(sep, cst.Comma) and "\n" in _BARE.code_for_node(sep)
    if multiline and isinstance(sep.whitespace_after, cst.ParenthesizedWhitespace):
        # the separator of a new argument: the line break and indent, not the comment after the
        # original argument (an argument keeps its own: `nn.Linear(4, 8),  # first`)
        sep = sep.with_changes(whitespace_after=sep.whitespace_after.with_changes(
            first_line=cst.TrailingWhitespace(), empty_lines=[]))
    for i, a in enumerate(new[:-1]):
        own = isinstance(a.comma, cst.Comma) and i < len(original) - 1
        if not own or (multiline and "\n" not in _BARE.code_for_node(a.comma)):
            new[i] = a.with_changes(comma=sep)
    new[-1] = new[-1].with_changes(comma=last_comma)
    return new


# --------------------------------------------------------------------------------------
# The rewriter
# --------------------------------------------------------------------------------------

@dataclass
class _Frame:
    node: cst.CSTNode
    removed: bool = False   # a conversion in this statement produced REMOVED
    diags: list[str] = field(default_factory=list)
    before: list[cst.BaseStatement] = field(default_factory=list)
    after: list[cst.BaseStatement] = field(default_factory=list)
    changes: int = 0        # the rewriter's change count when the statement was entered


class Rewriter(cst.CSTTransformer):
    def __init__(self, ctx: FileContext, table: ApiTable, focus: Focus | None = None) -> None:
        super().__init__()
        self.focus = focus            # statements outside it are neither visited nor rebuilt
        self.untouched: set[int] = set()
        self.changes = 0              # leave hooks that returned something new so far
        self.ctx = ctx
        self.path = ctx.path
        self.table = table
        self.module = ctx.module
        self._module_code: str | None = None
        self.config = ctx.module.config_for_parsing
        self.scopes = ScopeStack(dict(ctx.plan.existing))
        self.imports = plan = ctx.plan
        self.reporter = ctx.reporter
        self.positions = ctx.positions
        self.conversions = ctx.reporter.conversions
        self.frames: list[_Frame] = []
        self.pos_stack: list[tuple[int, int]] = []
        self.skip: set[int] = set(plan.generated)  # ids of nodes handled elsewhere
        self.replace: dict[int, cst.CSTNode] = {}
        # original calls converted from a record with `fields` (a named-tuple result): id -> fields
        self.result_fields: dict[int, tuple[str, ...]] = {}
        # per function scope: names an assignment binds to such a result (`m = torch.max(x, 1)`)
        self.named_results: list[dict[str, tuple[str, ...]]] = [{}]
        self.call_records: dict[int, tuple[ApiRecord, str]] = {}
        self.instances: dict[str, ApiRecord] = {}
        # names (`memory`, `self.memory`) bound to objects of plain classes: no Tensor/Module methods
        self.plain_objects: set[str] = set()
        self.plain_object_classes: dict[str, str] = {}   # plain object name -> its class (when known)
        self._returning_self = None   # see _methods_returning_self
        self.local_classes: dict[str, ApiRecord] = {}
        # ids of calls made as arguments of a program call or elements of a list (no name to set_train)
        self.argument_constructions: set[int] = set()
        # ids of calls a function of the program returns (`def get_model(): return Net()`), outside
        # a network class (whose children follow it)
        self.returned_constructions: set[int] = set()
        self.named_elements: set[int] = set()   # ids of values a tuple assignment names
        self.inherited_constructors: set[str] = set()   # local classes built by a torch base's __init__
        for name, qualname in ctx.project.items():   # classes and factories from other files
            rec = table.lookup(qualname)
            if rec is not None:
                self.local_classes[name] = rec
        # a criterion made once at the top level after the functions calling it (in the
        # `if __name__ == "__main__":` block): its calls convert as where it is made
        self.instances.update(_late_instances(ctx.module, ctx.names.imports, table, ctx.returned))
        self.implicit: set[int] = set()
        self.type_checks = 0  # inside isinstance()/issubclass() or an annotation: classes are only named
        self.stores: set[int] = set()   # ids of assignment/del targets (not reads)
        self.original_call: cst.Call | None = None   # the torch call being converted (promote)
        self.functions: list[str] = []  # names of the enclosing function definitions
        self.function_nodes: list[cst.FunctionDef] = []   # ... and the (original) nodes
        self.param_instances: list[dict] = []   # per enclosing def: instances its parameters shadowed
        self.called_refs: set[int] = set()   # ids of references passed to map/filter (called)
        self.cell_classes: list[bool] = []  # per enclosing class: is it a torch.nn.Module subclass
        # per enclosing class: its (original) node and len(self.functions) where its methods sit
        self.class_nodes: list[tuple[cst.ClassDef, int]] = []
        # classes the file defines or imports from the project: `Cls.method(...)` is called on a
        # class, never an instance method of a torch object (`Fn.apply(x)` is no Module.apply)
        self.file_classes: set[str] = ctx.names.classes | set(ctx.project_classes)

    def project_class(self, name: str) -> cst.ClassDef | None:
        """The definition of a class this file imports from another project file, if known."""
        code = self.ctx.project_classes.get(name)
        if code is None:
            return None
        try:
            stmt = cst.parse_statement(code)
        except cst.ParserSyntaxError:
            return None
        return stmt if isinstance(stmt, cst.ClassDef) else None

    # ---- positions and diagnostics -------------------------------------------------
    def _pos(self, node: cst.CSTNode) -> "_LazyPos":
        return _LazyPos(self, node, self.frames[-1].node if self.frames else None,
                        self.pos_stack[-1] if self.pos_stack else None)

    def flag(self, status_or_code: str, message: str, stop: bool = False) -> None:
        """`stop`: the marked code cannot run on the converted objects (it would fail mid-run):
        the file stops at its top, as for a torch use left (msmigrate.torch_left)."""
        line, col = self.pos_stack[-1] if self.pos_stack else (1, 1)
        marker = self.reporter.flag(status_or_code, message, line, col)
        if stop:
            self.reporter.stops.append(marker)
        if self.frames:
            self.frames[-1].diags.append(marker)

    def add_statement(self, stmt, after: bool, implicit: bool = False) -> None:
        if isinstance(stmt, str):
            stmt = cst.parse_statement(stmt, config=self.config)
        if implicit:
            self.implicit.add(id(stmt))
        frame = self.frames[-1]
        (frame.after if after else frame.before).append(stmt)

    def _record_conversion(self, rec: ApiRecord, qualname: str) -> None:
        line, col = self.pos_stack[-1] if self.pos_stack else (1, 1)
        self.conversions.append(Conversion(qualname, rec.target or rec.transform, rec.status, line, col))
        if rec.status != AUTO:
            self.flag(rec.status, f"{qualname}: {rec.note or CONVERT_CODES[STATUS_CODE[rec.status]]}")

    @property
    def module_code(self) -> str:
        """The code of the module this pass rewrites (generated once: transforms search it
        for how a name is used elsewhere)."""
        if self._module_code is None:
            self._module_code = self.module.code
        return self._module_code

    # ---- statements: frames for diagnostics and inserted statements ----------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind in _TRIVIA:
            return False
        if is_statement_type(kind):
            if self.focus is not None and not self.focus.wants(node):
                self.untouched.add(id(node))
                return False
            self.frames.append(_Frame(node, changes=self.changes))
        hook = _hook(kind, "visit_", self)
        return (hook is None or hook(self, node) is not False) and kind is not cst.Name

    def on_visit_attribute(self, node, attribute: str) -> None:
        if type(node) in _FIELD_HOOK_TYPES:
            hook = _hook(type(node), f"visit_{{}}_{attribute}", self)
            if hook is not None:
                hook(self, node)

    def on_leave_attribute(self, original, attribute: str) -> None:
        pass   # the rewriter has no leave_<Node>_<attribute> hooks

    def on_leave(self, original, updated):
        kind = type(original)
        if kind in _TRIVIA:
            return updated
        hook = _hook(kind, "leave_", self)
        if not is_statement_type(kind):
            if kind in _OPERAND_FIELDS and updated is not original:
                updated = _parenthesise_operands(original, updated)
            result = updated if hook is None else hook(self, original, updated)
            if result is not updated:
                self.changes += 1
            return result
        if id(original) in self.untouched:
            return original
        result = updated if hook is None else hook(self, original, updated)
        if self.frames[-1].removed and isinstance(result, cst.CSTNode):
            self.pos_stack.append(self._pos(original))
            result = self._removed_as_value(result)
            self.pos_stack.pop()
        frame = self.frames.pop()
        if isinstance(result, cst.RemovalSentinel) or (
                isinstance(result, cst.SimpleStatementLine) and not result.body):
            nodes = [*frame.before, *frame.after]
            if not nodes:
                if not frame.diags:
                    return cst.RemoveFromParent()
                nodes = [cst.SimpleStatementLine([cst.Pass()])]
            nodes[0] = nodes[0].with_changes(leading_lines=[*original.leading_lines, *nodes[0].leading_lines])
            frame.before, frame.after = [], []
        else:
            nodes = list(result.nodes) if isinstance(result, cst.FlattenSentinel) else [result]
        if frame.diags:
            # a file's first statement: its comments above are the module header
            header = self.module.header if self.module.body and original is self.module.body[0] else ()
            nodes[0] = _with_markers(nodes[0], frame.diags, header)
        nodes = [*frame.before, *nodes, *frame.after]
        out = cst.FlattenSentinel(nodes) if len(nodes) != 1 else nodes[0]
        if out is not updated:
            self.changes += 1
        # a statement nothing changed in stays the original object (rebuilt copies are equal):
        # later passes and the code generation recognise it
        return original if self.changes == frame.changes else out

    def _removed_as_value(self, stmt):
        """A call that has nothing to do in MindSpore, used as a value (`flags = [sync()]`):
        it becomes None, flagged, instead of leaving an undefined name behind."""
        finder = _FindRemoved()
        stmt.visit(finder)
        if not finder.found:
            return stmt
        self.flag("review", "a call with no MindSpore counterpart is used as a value here: "
                            "replaced by None")
        return stmt.visit(_ReplaceRemoved())

    def leave_SimpleStatementLine(self, original, updated):
        body = [s for s, o in zip(updated.body, original.body) if not _is_noop(o, s)]
        if len(body) == len(updated.body):
            return updated
        if not body:
            return cst.RemoveFromParent()
        body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(body=body)

    def leave_IndentedBlock(self, original, updated):
        body = _drop_superseded(list(updated.body), self.implicit)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        elif len(body) == len(updated.body):
            return updated
        return updated.with_changes(body=body)

    def leave_Module(self, original, updated):
        body = _drop_superseded(list(updated.body), self.implicit)
        return updated if len(body) == len(updated.body) else updated.with_changes(body=body)

    def leave_If(self, original, updated):
        """`if torch.cuda.is_available(): x = x.cuda()` emptied by the conversion to `pass`: the
        test only queries (names, torch attributes and calls) and the block does nothing, so the
        statement goes: a device query left in a compiled step does not compile. Likewise
        `if torch.cuda.is_available(): h = zeros(n).cuda() else: h = zeros(n)`, whose branches the
        conversion made the same: the statement becomes that branch."""
        if isinstance(updated.orelse, cst.Else) and _same_block(updated.body, updated.orelse.body) \
                and self._is_query(original.test):
            body = list(updated.body.body) if isinstance(updated.body, cst.IndentedBlock) else [
                cst.SimpleStatementLine(list(updated.body.body))]
            body[0] = body[0].with_changes(leading_lines=[*updated.leading_lines, *body[0].leading_lines])
            return cst.FlattenSentinel(body)
        if updated.orelse is not None or not _only_pass(updated.body) or _only_pass(original.body):
            return updated
        if not self._is_query(original.test):
            return updated
        return cst.RemoveFromParent()

    def _is_query(self, node) -> bool:
        if isinstance(node, (cst.Name, cst.Integer, cst.SimpleString)):
            return True
        if isinstance(node, cst.Attribute):
            return self._is_query(node.value)
        if isinstance(node, cst.UnaryOperation):
            return self._is_query(node.expression)
        if isinstance(node, cst.BooleanOperation):
            return self._is_query(node.left) and self._is_query(node.right)
        if isinstance(node, cst.Comparison):
            return self._is_query(node.left) and all(self._is_query(c.comparator) for c in node.comparisons)
        if isinstance(node, cst.Call):
            q = self.scopes.resolve(node.func) or ""
            return is_source(q) and all(self._is_query(a.value) for a in node.args)
        return False

    def leave_With(self, original, updated):
        items = [i for i in updated.items if not _is_removed(i.item)]
        if len(items) == len(updated.items):
            return updated
        if items:
            items[-1] = items[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(items=items)
        body = list(updated.body.body) if isinstance(updated.body, cst.IndentedBlock) else [
            cst.SimpleStatementLine(list(updated.body.body))]
        body[0] = body[0].with_changes(leading_lines=[*updated.leading_lines, *body[0].leading_lines])
        return cst.FlattenSentinel(body)

    def leave_Decorator(self, original, updated):
        if _is_removed(updated.decorator):
            return cst.RemoveFromParent()
        return updated

    # ---- scopes ----------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        in_class = bool(self.scopes.stack) and self.scopes.stack[-1].kind == "class"
        known = self.ctx.known_scope(node)
        self.scopes.push_function(node, known)
        self.functions.append(node.name.value)
        self.function_nodes.append(node)
        # parameters every call in the file passes an object with call-site rules for
        # (`def train(model, loss, ...)` called with a CrossEntropyLoss): bound while inside;
        # any other parameter of a def of the source shadows an object of its name made outside
        # (the functions a structural pass generates pass their objects on by the same names)
        shadowed = {}
        passed = {} if in_class else self.ctx.arguments.get(node.name.value, {})
        for param in params_of(node.params):
            if passed.get(param) == PLAIN_OBJECT:
                self.plain_objects.add(param)
            else:
                self.plain_objects.discard(param)
            rec = self.table.lookup(passed[param]) if param in passed else None
            if rec is not None and rec.instance_call:
                shadowed[param] = self.instances.get(param)
                self.instances[param] = rec
            elif known is not None and param in self.instances and self.instances[param].instance_call:
                shadowed[param] = self.instances.pop(param)
        self.param_instances.append(shadowed)
        self.named_results.append({})

    def leave_FunctionDef(self, original, updated):
        self.scopes.pop()
        self.functions.pop()
        self.function_nodes.pop()
        self.named_results.pop()
        for param, before in self.param_instances.pop().items():
            if before is None:
                self.instances.pop(param, None)
            else:
                self.instances[param] = before
        return updated

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.scopes.push_function(node)

    def leave_Lambda(self, original, updated):
        self.scopes.pop()
        return updated

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        cell = False
        for base in node.bases:
            found = self._class_base_record(base.value)
            if found is not None:
                self._skip_chain(base.value)
                cell = cell or found[0].torch.startswith("torch.nn.")
        self.cell_classes.append(cell)
        self.class_nodes.append((node, len(self.functions)))
        self.scopes.push_class(node, self.ctx.known_scope(node))

    def _class_base_record(self, expr) -> tuple[ApiRecord, str] | None:
        q = self.scopes.resolve(expr)
        if is_source(q):
            rec = self.table.lookup(q)
            return (rec, q) if rec is not None else None
        name = dotted(expr)
        if name in self.local_classes:
            return self.local_classes[name], name
        return None

    def leave_ClassDef(self, original, updated):
        self.scopes.pop()
        self.cell_classes.pop()
        self.plain_objects = {n for n in self.plain_objects if not n.startswith("self.")}
        self.class_nodes.pop()
        bases = []
        root: ApiRecord | None = None
        self.pos_stack.append(self._pos(original))
        for orig, new in zip(original.bases, updated.bases):
            found = self._class_base_record(orig.value)
            if found is None:
                bases.append(new)
                continue
            rec, q = found
            if root is None:
                root, root_q = rec, q
            if q in self.local_classes:       # a local subclass: the base stays
                bases.append(new)
                continue
            self._record_conversion(rec, q)
            if rec.target:
                bases.append(new.with_changes(value=self.imports.ref(rec.target)))
        self.pos_stack.pop()
        if root is None:
            return updated
        self.local_classes[original.name.value] = root
        if root_q not in self.local_classes and not any(
                isinstance(s, cst.FunctionDef) and s.name.value == "__init__" for s in original.body.body):
            self.inherited_constructors.add(original.name.value)
        if bases:
            bases[-1] = bases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            updated = updated.with_changes(bases=bases)
        else:
            updated = updated.with_changes(bases=[], lpar=cst.MaybeSentinel.DEFAULT,
                                           rpar=cst.MaybeSentinel.DEFAULT)
        if root.subclass:
            site = Site(self, root, root.torch, updated)
            updated = transform_function(root.subclass)(updated, site)
        return updated

    # ---- references ------------------------------------------------------------------
    def _named_field(self, node: cst.Attribute) -> bool:
        """`m.indices` of a name bound to torch's named-tuple result (`m = torch.max(x, 1)`)."""
        return isinstance(node.value, cst.Name) and \
            node.attr.value in self.named_results[-1].get(node.value.value, ())

    def _skip_chain(self, expr) -> None:
        """The dotted chain of a call's func or a class base is resolved by the enclosing node."""
        while True:
            self.skip.add(id(expr))
            if not isinstance(expr, cst.Attribute):
                return
            expr = expr.value

    def visit_Call(self, node: cst.Call) -> None:
        self._skip_chain(node.func)
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute) and \
                (any(r.read for r in self.table.methods(func.value.attr.value)) or self._named_field(func.value)) and \
                not is_source(self.scopes.resolve(func.value)):    # not a module path: torch.utils.data.X
            # a method called on a tensor attribute read (`w.data.numpy()`, `x.real.sum()`) or on
            # a field of a named result (`m = x.max(1)` ... `m.indices.tolist()`): the receiver is
            # read like any other (leave_Attribute)
            self.skip.discard(id(func.value))
        q = self.scopes.resolve(func)
        rec = self.table.lookup(q) if is_source(q) else None
        if rec is not None and rec.drop:
            # an argument the record drops is not converted (`torch.jit.annotate(torch.Tensor, v)`)
            bound, _ = _bind(rec, node.args)
            for name in rec.drop:
                if name in bound:
                    self.skip.update(id(n) for n in cstm.findall(bound[name].value, cstm.Name() | cstm.Attribute()))
        if isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass"):
            self.type_checks += 1
        if isinstance(func, cst.Name) and func.value in ("map", "filter") and node.args and \
                node.args[0].keyword is None and not node.args[0].star and \
                self.scopes.resolve_name(func.value) is None:
            # `map(torch.LongTensor, rows)`: the reference is called, one argument at a time
            self.called_refs.add(id(node.args[0].value))
        if not is_source(q) and dotted(func) not in self.local_classes:
            # `train(Net(), loader)`: a network made as an argument of the program's own function
            # (not a child given to a torch container) has no name its record's on_instantiate
            # could speak of
            self.argument_constructions.update(id(a.value) for a in node.args if isinstance(a.value, cst.Call))

    def visit_Return(self, node: cst.Return) -> None:
        # `return Net()` of a factory function: the network it returns starts in training mode
        if isinstance(node.value, cst.Call) and self.functions and not any(self.cell_classes):
            self.returned_constructions.add(id(node.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        # `a, b = Net(), Net()`: each is named (on_instantiate speaks of the name)
        if isinstance(node.value, (cst.Tuple, cst.List)) and \
                any(isinstance(t.target, (cst.Tuple, cst.List)) for t in node.targets):
            self.named_elements.update(id(e.value) for e in node.value.elements)

    def visit_Element(self, node: cst.Element) -> None:
        # `nets = [Net(), Net()]`: networks made in a list, tuple or set (as in an argument)
        if isinstance(node.value, cst.Call) and id(node.value) not in self.named_elements:
            self.argument_constructions.add(id(node.value))

    def visit_ListComp(self, node: cst.ListComp) -> None:
        if isinstance(node.elt, cst.Call):   # `[Net() for _ in range(3)]`
            self.argument_constructions.add(id(node.elt))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if _is_type_test(node):
            self.type_checks += 1

    def leave_Index(self, original, updated):
        # `mask[i, p[0]]` with p a NumPy array: MindSpore's indexing rejects a NumPy integer
        if id(original.value) in self.ctx.numpy_indices:
            return updated.with_changes(value=cst.Call(cst.Name("int"), [cst.Arg(updated.value)]))
        return updated

    def leave_Comparison(self, original, updated):
        if _is_type_test(original):
            self.type_checks -= 1
        return updated

    # an annotation (`x: torch.Tensor`) names a class as isinstance does: nothing is called
    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.type_checks += 1

    def leave_Annotation(self, original, updated):
        self.type_checks -= 1
        return updated

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.skip.add(id(node.attr))
        if id(node) in self.skip:
            # a call's func or a class base, resolved by the Call/ClassDef: a plain dotted
            # chain holds nothing else (its Names are skipped too), but a receiver read like an
            # attribute (visit_Call)
            return dotted(node) is None or (isinstance(node.value, cst.Attribute) and id(node.value) not in self.skip)
        return self._visit_reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.skip:
            self._visit_reference(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.stores.add(id(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.stores.add(id(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.stores.add(id(node.target))

    def visit_Del(self, node: cst.Del) -> None:
        self.stores.add(id(node.target))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.skip.add(id(node.name))

    def visit_FunctionDef_name(self, node: cst.FunctionDef) -> None:
        self.skip.add(id(node.name))

    def visit_ClassDef_name(self, node: cst.ClassDef) -> None:
        self.skip.add(id(node.name))

    def _visit_reference(self, node) -> bool:
        """A bare reference (not called): `torch.float32`, `F.relu` passed as a value."""
        q = self.scopes.resolve(node)
        if not is_source(q):
            # a dotted name not rooted at torch: its prefixes share the root, nothing to visit,
            # except an attribute read a record converts (`net.module.weight`: the inner read)
            return dotted(node) is None or self._inner_read(node)
        self.pos_stack.append(self._pos(node))
        try:
            self.replace[id(node)] = self._convert_reference(node, q)
        finally:
            self.pos_stack.pop()
        return False

    def _inner_read(self, node) -> bool:
        """Does the chain `node` hold, below its outermost name, an attribute that a record
        converts where it is read (`.module` of a DataParallel, `.real` of a tensor)?"""
        inner = node.value if isinstance(node, cst.Attribute) else None
        while isinstance(inner, cst.Attribute):
            if any(r.read for r in self.table.methods(inner.attr.value)):
                return True
            inner = inner.value
        return False

    def _convert_reference(self, node, q: str) -> cst.BaseExpression:
        rec = self.table.lookup(q)
        if rec is None:
            if q in self.table.namespaces:
                self.flag("MSC104", f"{q} is used as a module object: convert its uses by hand")
            else:
                self.flag("MSC104", f"{q} is not in the mapping tables")
            return self.imports.source_ref(q)
        if rec.is_method:
            self.flag("MSC104", f"{q} used as a value: convert its uses by hand")
            return self.imports.source_ref(q)
        if id(node) in self.called_refs and (rec.transform or rec.rename or rec.values or rec.pin):
            # called by map/filter with one argument: `lambda data: <the call's conversion>`
            # (its target alone may be another kind of thing: torch.LongTensor -> ms.int64)
            param = "data" if self.scopes.resolve_name("data") is None else "data_"
            call = cst.Call(func=node, args=[cst.Arg(cst.Name(param))])
            out = self._apply(rec, q, call, None)
            if isinstance(out, cst.BaseExpression) and not _is_removed(out) and out is not call:
                return cst.Lambda(params=cst.Parameters(params=[cst.Param(cst.Name(param))]), body=out)
        try:
            if rec.target:   # a reference, not a call: transforms of calls do not apply
                out = self.imports.ref(rec.target)
                if (rec.rename or rec.values or rec.pin or rec.transform) and not self.type_checks:
                    self.flag("review", f"{q} used as a value: its argument differences "
                                        f"({_differences(rec)}) are not applied")
            elif rec.transform:   # transform-only records (`@torch.no_grad`) see the reference
                out = transform_function(rec.transform)(Site(self, rec, q, node))
            else:
                raise Unconvertible(rec.note or f"{q} has no MindSpore equivalent", rec.status)
        except Unconvertible as exc:
            self.flag(exc.status if rec.status == AUTO else rec.status, f"{q}: {exc}")
            return self.imports.source_ref(q)
        except Exception:  # transforms are written for calls; this is a bare reference
            self.flag("manual", f"{q} used as a value: its conversion needs the call's arguments; "
                                f"convert this use by hand")
            return self.imports.source_ref(q)
        self._record_conversion(rec, q)
        if _is_removed(out) and self.frames:
            self.frames[-1].removed = True
        return out

    def leave_Attribute(self, original, updated):
        if id(original) in self.replace:
            return self.replace.pop(id(original))
        fields = self.result_fields.get(id(original.value), ()) or \
            (self.named_results[-1].get(original.value.value, ()) if isinstance(original.value, cst.Name) else ())
        if original.attr.value in fields:   # `torch.sort(x).values`: MindSpore's tuple by position
            return cst.Subscript(value=updated.value, slice=[cst.SubscriptElement(
                cst.Index(cst.Integer(str(fields.index(original.attr.value)))))])
        if id(original) in self.skip or id(original) in self.stores:
            return updated
        candidates = [r for r in self.table.methods(original.attr.value) if r.read]
        inst = self._receiver_instance(original.value) if candidates else None
        bound = [c for c in candidates if c.class_bound and inst is not None
                 and self._same_class(c.torch.rpartition(".")[0], inst)]
        # an attribute of an object known to be of a class with such records (`dist.mean`)
        candidates = bound or [c for c in candidates if not c.class_bound]
        if not candidates or not (bound or self._tensor_receiver(original.value)):
            return updated
        # `x.real` reads a Tensor attribute: converted as the call `x.real()` would be
        self.pos_stack.append(self._pos(original))
        try:
            call = cst.Call(func=updated)
            out = self._apply(candidates[0], candidates[0].torch, call, updated.value, inst if bound else None)
        finally:
            self.pos_stack.pop()
        return updated if out is call else out

    def _tensor_receiver(self, receiver) -> bool:
        """Could `receiver` be a tensor (not a literal, `self`, a module, or the result of a
        call of a module that is not torch's: `np.fft.fft(s).real`)?"""
        if isinstance(receiver, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                                 cst.Integer, cst.Float, cst.Imaginary, cst.List, cst.Dict, cst.Set)):
            return False
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            return False
        if self._program_object(receiver):
            return False
        root = dotted(receiver.func if isinstance(receiver, cst.Call) else receiver)
        if root is not None:
            bound = self.scopes.resolve_name(root.split(".")[0])
            if bound is not None and not is_source(bound):
                return False
        return True

    def _names_class(self, name: str) -> bool:
        """Whether `name`, one of the file's classes, still names the class here: not a parameter
        or local of an enclosing function (`def train(Net, x)`), nor rebound to an instance
        (`Net = Net()`, a class name reused for its object)."""
        for i in range(len(self.scopes.stack) - 1, 0, -1):
            scope = self.scopes.stack[i]
            if scope.kind == "function" and name in scope.bindings:
                return False
        return self.instances.get(name) is None

    def _program_object(self, receiver) -> bool:
        """Whether `receiver` holds an object whose methods share torch's names but are its own:
        one of the program's plain classes (`memory.size()` of a replay buffer) or a value of
        another array library (`m.multiply(o)` of a SciPy matrix, `a.dot(b)` of a NumPy array)."""
        return dotted(receiver) in self.plain_objects or id(receiver) in self.ctx.foreign or \
            self._plain_class(receiver) is not None

    def _plain_class(self, value) -> str | None:
        """The plain class of the program whose object `value` makes (`Solver(3)`), or whose
        method returning `self` it calls on one (`Solver(3).train(2)`, the class's own `train`)."""
        if not isinstance(value, cst.Call):
            return None
        if dotted(value.func) in self.ctx.plain_classes:
            return dotted(value.func)
        if not isinstance(value.func, cst.Attribute):
            return None
        owner = value.func.value
        cls = self._plain_class(owner) or self.plain_object_classes.get(dotted(owner) or "")
        return cls if value.func.attr.value in self._methods_returning_self().get(cls, ()) else None

    def _methods_returning_self(self) -> dict[str, set[str]]:
        """Plain class -> its methods whose every `return` gives `self` (scanned once)."""
        if self._returning_self is None:
            self._returning_self = {}
            for cls in self.ctx.module.body:
                if isinstance(cls, cst.ClassDef) and cls.name.value in self.ctx.plain_classes:
                    self._returning_self[cls.name.value] = {
                        f.name.value for f in cls.body.body if isinstance(f, cst.FunctionDef)
                        and (returns := _own_returns(f))
                        and all(isinstance(r.value, cst.Name) and r.value.value == "self" for r in returns)}
        return self._returning_self

    def leave_UnaryOperation(self, original, updated):
        """`~x`: the record of torch.Tensor.__invert__ (rules), its operand as the receiver."""
        dunder = _UNARY_DUNDERS.get(type(original.operator))
        rec = self.table.lookup(f"torch.Tensor.{dunder}") if dunder else None
        if rec is None or not self._tensor_receiver(original.expression):
            return updated
        self.pos_stack.append(self._pos(original))
        try:
            site = Site(self, rec, rec.torch, updated, updated.expression)
            site.original_receiver = original.expression
            out = transform_function(rec.transform)(site)
        except Unconvertible as exc:
            self.flag(exc.status, f"{rec.torch}: {exc}")
            return updated
        except Exception as exc:  # a bug in a transform must not cost the rest of the file
            self.flag("MSC107", f"{rec.torch}: {_describe(exc)}")
            return updated
        finally:
            self.pos_stack.pop()
        if out is not updated:
            self._record_conversion(rec, rec.torch)
        return out

    def leave_Name(self, original, updated):
        return self.replace.pop(id(original), updated)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if isinstance(original.func, cst.Name) and original.func.value in ("isinstance", "issubclass"):
            self.type_checks -= 1
        self.pos_stack.append(self._pos(original))
        self.original_call = original
        try:
            return self._convert_call(original, updated)
        finally:
            self.pos_stack.pop()
            self.original_call = None

    def _convert_call(self, original: cst.Call, updated: cst.Call):
        if id(original.func) in self.imports.generated:
            return updated
        q = self.scopes.resolve(original.func)
        if is_source(q):
            rec = self.table.lookup(q)
            if rec is None:
                updated = updated.with_changes(func=self._convert_reference(original.func, q))
                return updated
            self.call_records[id(original)] = (rec, q)
            if rec.is_method:   # torch.Tensor.view(x, 2, 3) -> x.view(2, 3)
                return self._unbound_method(rec, q, updated)
            out = self._apply(rec, q, updated, None)
            if id(original) in self.returned_constructions and rec.on_instantiate and isinstance(out, cst.Call) and \
                    (q in _MODE_CONTAINERS or rec.instance_call == "models.train_inline"):
                inline = transform_function(rec.on_instantiate)(Site(self, rec, rec.torch, out), None)
                return inline if inline is not None else out
            return out
        name = dotted(original.func) or _element_name(original.func)
        if name in self.local_classes:
            rec = self.local_classes[name]
            self.call_records[id(original)] = (rec, name)
            if id(original) in self.argument_constructions | self.returned_constructions and rec.on_instantiate and \
                    name not in self.inherited_constructors:
                inline = transform_function(rec.on_instantiate)(Site(self, rec, rec.torch, updated), None)
                if inline is not None:
                    return inline
            if name in self.inherited_constructors and rec.args and rec.target:
                # a subclass without __init__ takes the torch base's constructor arguments:
                # they convert as in a call of the base; the class stays the callee
                out = self._apply(rec, rec.torch, updated, None)
                return out.with_changes(func=updated.func) if isinstance(out, cst.Call) else updated
            return updated
        if name in self.instances and self.instances[name].instance_call:
            rec = self.instances[name]
            try:
                return transform_function(rec.instance_call)(Site(self, rec, rec.torch, updated))
            except Unconvertible as exc:
                self.flag(exc.status, f"{name}(...) ({rec.torch}): {exc}")
            except Exception as exc:  # a bug in a transform must not cost the rest of the file
                self.flag("MSC107", f"{name}(...) ({rec.torch}): {_describe(exc)}")
            return updated
        if name in self.instances:
            return updated  # `self.norm(x)` calls a layer object, not a method `norm` of `self`
        inline = self.call_records.get(id(original.func)) if isinstance(original.func, cst.Call) else None
        if inline is not None and inline[0].instance_call:
            # an object made and called in one expression (`nn.BatchNorm2d(3)(x)`): its calls'
            # rule applies as for a named one
            rec = inline[0]
            try:
                return transform_function(rec.instance_call)(Site(self, rec, rec.torch, updated))
            except Unconvertible as exc:
                self.flag(exc.status, f"{inline[1]}(...)(...): {exc}")
            except Exception as exc:  # a bug in a transform must not cost the rest of the file
                self.flag("MSC107", f"{inline[1]}(...)(...): {_describe(exc)}")
            return updated
        if isinstance(original.func, cst.Attribute):
            return self._convert_method(original, updated)
        return updated

    def _unbound_method(self, rec: ApiRecord, q: str, updated: cst.Call):
        args = list(updated.args)
        if not args or args[0].keyword is not None or args[0].star:
            self.flag("MSC106", f"{q} called without its tensor as the first argument")
            return updated.with_changes(func=self.imports.source_ref(q))
        receiver = args[0].value
        bound = updated.with_changes(func=cst.Attribute(value=receiver, attr=cst.Name(rec.method_name)),
                                     args=args[1:])
        return self._apply(rec, q, bound, receiver)

    def _convert_method(self, original: cst.Call, updated: cst.Call):
        method = original.func.attr.value
        candidates = self.table.methods(method)
        if (candidates or method in self.table.verified_methods) and self._made_by_torch_function(original.func.value):
            updated = _torch_keywords(updated)   # `x.mean(axis=0, keepdims=True)` of a tensor
        if not candidates:
            return updated
        receiver = original.func.value
        if isinstance(receiver, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                                 cst.Integer, cst.Float, cst.List, cst.Dict, cst.Set)):
            return updated
        root = dotted(receiver)
        if root is not None:
            bound = self.scopes.resolve_name(root.split(".")[0])
            if bound is not None and not is_source(bound):
                return updated  # np.repeat, math.floor...: a module, not a tensor
        if isinstance(receiver, cst.Name) and receiver.value in self.file_classes and self._names_class(receiver.value):
            return updated
        if self._program_object(receiver):
            return updated
        rec = self._pick_method(candidates, receiver)
        if rec is None:
            return updated
        if self._receiver_instance(receiver) is None and not _binds(rec, original.args):
            return updated  # `learner.train(epochs=10)`: not the torch method of that name
        if rec.calls_object:   # `criterion.forward(out, y)` is `criterion(out, y)`
            inst = self.instances.get(root or "")
            if inst is not None and inst.instance_call:
                try:
                    updated = transform_function(inst.instance_call)(Site(self, inst, inst.torch, updated))
                except Unconvertible as exc:
                    self.flag(exc.status, f"{root}.{method}(...) ({inst.torch}): {exc}")
                except Exception as exc:  # a bug in a transform must not cost the rest of the file
                    self.flag("MSC107", f"{root}.{method}(...) ({inst.torch}): {_describe(exc)}")
        q = rec.torch
        return self._apply(rec, q, updated, updated.func.value,
                           self._receiver_instance(receiver) if rec.class_bound else None)

    def _made_by_torch_function(self, receiver) -> bool:
        """Whether `receiver` visibly holds what a torch function made (`a = torch.rand(3)`): a
        tensor, not a NumPy array, whose methods take NumPy's keyword names too."""
        inst = self._receiver_instance(receiver)
        name = inst.torch.rsplit(".", 1)[-1] if inst is not None else ""
        return name[:1].islower() and inst.torch.count(".") == 1 and inst.torch.startswith("torch.")

    def _receiver_instance(self, receiver) -> ApiRecord | None:
        """The record of the torch object `receiver` holds, where it is known."""
        inst = self.instances.get(dotted(receiver) or "")
        if inst is None and isinstance(receiver, cst.Call):  # `Net().to(device)`, `Net().half().float()`
            inst = self._constructed(receiver)
        if inst is None and isinstance(receiver, cst.Attribute) and \
                self.instances.get(dotted(receiver.value) or "") in self.local_classes.values():
            # `model.backbone` of a model whose class assigns `self.backbone = nn.Sequential(...)`
            inst = self.instances.get(f"self.{receiver.attr.value}")
        return inst

    def _pick_method(self, candidates: list[ApiRecord], receiver) -> ApiRecord | None:
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            # inside a class, `self.norm(x)` calls an attribute, never a Tensor method
            candidates = [c for c in candidates if not c.torch.startswith("torch.Tensor.")]
            if not candidates:
                return None
        inst = self._receiver_instance(receiver)
        if inst is not None:   # a method of the receiver's own class (or of a class converted alike)
            own = [c for c in candidates if self._same_class(c.torch.rpartition(".")[0], inst)]
            if own:
                return own[0]
        candidates = [c for c in candidates if not c.class_bound]   # not known to be that object
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        is_cell = inst is not None and creates_cell(inst)
        prefix = "torch.nn.Module." if is_cell else "torch.Tensor."
        return next((c for c in candidates if c.torch.startswith(prefix)), candidates[0])

    def _same_class(self, cls: str, inst: ApiRecord) -> bool:
        if inst.base and inst.base == cls:
            return True
        rec = self.table.lookup(cls)
        return rec is not None and (rec is inst or (rec.transform == inst.transform and rec.target == inst.target
                                                    and bool(rec.transform or rec.target)))

    def _apply(self, rec: ApiRecord, q: str, updated: cst.Call, receiver, instance: ApiRecord | None = None):
        site = Site(self, rec, q, updated, receiver, instance)
        try:
            from msmigrate.rules import OUT_TARGET, WRITE_OUT
            out_target = transform_function(OUT_TARGET)(site) if "out" in site.bound else None
            if rec.visible and receiver is None and self.original_call is not None:
                from msmigrate.rules import PROMOTE
                original = self.original_call
                args = list(original.args)
                if isinstance(original.func, cst.Attribute) and not is_source(self.scopes.resolve(original.func)):
                    args.insert(0, cst.Arg(original.func.value))   # x.sin() converted as torch.sin(x)
                transform_function(PROMOTE)(site, _bind(rec, args)[0])
                rec = site.record   # one computing a visibly complex argument otherwise (record `complex`)
            if rec.transform:
                out = transform_function(rec.transform)(site)
            elif receiver is not None:
                out = _method_call(site)
            elif rec.target:
                out = site.call(rec.target)
            else:
                raise Unconvertible(rec.note or f"{q} has no MindSpore equivalent", rec.status)
            if site.result_dtype is not None and not _is_removed(out):
                out = site.expr("{v}.astype({t})", v=atom(out, attribute=True), t=site.result_dtype)
            for wrap in site.wraps:   # what PROMOTE added to the arguments, taken off the result
                out = out if _is_removed(out) else wrap(out)
            if out_target is not None and not _is_removed(out):
                out = transform_function(WRITE_OUT)(site, out_target, out)
            if rec.inplace and receiver is None and not _is_removed(out):
                from msmigrate.rules import INPLACE
                out = transform_function(INPLACE)(site, out)
        except Unconvertible as exc:
            self.flag(exc.status if rec.status == AUTO else rec.status, f"{q}: {exc}")
            if receiver is None:
                return updated.with_changes(func=self.imports.source_ref(q))
            return updated
        except Exception as exc:  # a bug in a transform must not cost the rest of the file
            self.flag("MSC107", f"{q}: {_describe(exc)}")
            if receiver is None:
                return updated.with_changes(func=self.imports.source_ref(q))
            return updated
        self._record_conversion(rec, q)
        if rec.fields and self.original_call is not None:
            self.result_fields[id(self.original_call)] = rec.fields
        if _is_removed(out) and self.frames:
            self.frames[-1].removed = True
        return _keep_parens(updated, out)

    # ---- objects created from torch APIs ---------------------------------------------
    def _constructed(self, value) -> ApiRecord | None:
        """The record of the torch object `value` constructs, if it is a recorded call."""
        # `model = Net().to(device)`: the object is the constructor's (moves and casts return it)
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                value.func.attr.value in _RETURNS_SELF and id(value) not in self.call_records:
            value = value.func.value
        found = self.call_records.get(id(value)) if isinstance(value, cst.Call) else None
        if found is None and isinstance(value, cst.Call):
            return self._converted_constructor(value)
        if found is not None and found[0].torch in _RETURNS_FIRST_ARGUMENT and value.args:
            return self._constructed(value.args[0].value)   # `model = torch.compile(Net())`
        return None if found is None else found[0]

    def _deep_copy_of(self, value) -> ApiRecord | None:
        """The record of the object `copy.deepcopy(x)` copies, where x's is known."""
        if isinstance(value, cst.Call) and len(value.args) == 1 and not value.args[0].star and \
                self.scopes.resolve(value.func) == "copy.deepcopy":
            return self.instances.get(dotted(value.args[0].value) or "")
        return None

    def _converted_constructor(self, call: cst.Call) -> ApiRecord | None:
        """Code converted before (a second run over a converted file): the MindSpore class a
        record with class-bound methods targets, called directly (`msd.Gamma(...)`) or through
        a generated function taking it first (`msmigrate_distribution(msd.Gamma, ...)`) makes an
        object of that record, so its methods convert as they did the first time."""
        heads = [call.func]
        if isinstance(call.func, cst.Name) and call.func.value.startswith("msmigrate_") and call.args:
            heads.append(call.args[0].value)
        for head in heads:
            q = self.scopes.resolve(head)
            rec = self.table.by_base_target.get(q or "")
            if rec is not None:
                return rec
        return None

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        fields = self.result_fields.get(id(original.value))   # `m = torch.max(x, 1)` ... `m.values`
        for t in original.targets:
            if isinstance(t.target, cst.Name):
                if fields:
                    self.named_results[-1][t.target.value] = fields
                else:
                    self.named_results[-1].pop(t.target.value, None)
        plain = self._plain_class(original.value)
        for t in original.targets:
            name = dotted(t.target)
            if name is not None:
                (self.plain_objects.add if plain else self.plain_objects.discard)(name)
                if plain:
                    self.plain_object_classes[name] = plain
                else:
                    self.plain_object_classes.pop(name, None)
        target = original.targets[0].target if len(original.targets) == 1 else None
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(original.value, (cst.Tuple, cst.List)):
            return self._bind_unpacked(original, updated, target.elements, original.value.elements)
        for t in original.targets:   # a name bound again holds none of its old elements
            if dotted(t.target) is not None:
                self._bind_elements(dotted(t.target), original.value)
        self._bind_returned(original)
        rec = self._constructed(original.value)
        if rec is None:
            copied = self._deep_copy_of(original.value)
            if copied is not None:   # `ema = copy.deepcopy(model)`: the same kind of object, its mode kept
                for t in original.targets:
                    if dotted(t.target) is not None:
                        self.instances[dotted(t.target)] = copied
            return updated
        self.pos_stack.append(self._pos(original))
        try:
            self._bind_instances(original, updated, rec)
        finally:
            self.pos_stack.pop()
        return updated

    def _bind_returned(self, original: cst.Assign) -> None:
        """`optimizer, scheduler = build(model)` / `criterion = make_loss()` of the file's own
        function returning torch objects (FileContext.returned): each name is an object of its
        record, as if it were made here (a scheduler's state_dict, a loss's int32 labels)."""
        for name, q in returned_bindings(self.ctx.returned, self.scopes, original):
            rec = self.table.lookup(q)
            if rec is not None:
                self.instances[name] = rec

    def _bind_elements(self, name: str, value) -> None:
        """`criteria = {"cls": nn.CrossEntropyLoss(), ...}` (or a list, tuple, ModuleDict or
        ModuleList of them): each element a constructor made is an object of its record under the
        name `criteria['cls']` / `losses[0]`, so `criteria["cls"](out, y)` converts as a call of
        that object (CrossEntropyLoss's int32 labels). Elements of an earlier value are dropped."""
        for key in [k for k in self.instances if k.startswith(name + "[")]:
            del self.instances[key]
        if isinstance(value, cst.Call) and len(value.args) == 1 and \
                self.scopes.resolve(value.func) in ("torch.nn.ModuleDict", "torch.nn.ModuleList"):
            value = value.args[0].value
        if isinstance(value, cst.Dict):
            items = [(e.key, e.value) for e in value.elements if isinstance(e, cst.DictElement)]
        elif isinstance(value, (cst.List, cst.Tuple)):
            items = [(cst.Integer(str(i)), e.value) for i, e in enumerate(value.elements)
                     if not isinstance(e, cst.StarredElement)]
        else:
            return
        for key, element in items:
            key_name = _element_key(key)
            rec = self._constructed(element)
            if key_name is not None and rec is not None:
                self.instances[name + key_name] = rec

    def _bind_unpacked(self, original: cst.Assign, updated: cst.Assign, names, values):
        """`net_a, net_b = Net(), Net()`: each name is bound to its own constructor, as if assigned
        alone (a model made so starts in training mode too)."""
        if len(names) != len(values) or any(isinstance(e, cst.StarredElement) for e in (*names, *values)):
            return updated
        self.pos_stack.append(self._pos(original))
        try:
            for target, value in zip(names, values):
                rec, name = self._constructed(value.value), dotted(target.value)
                if rec is None or name is None:
                    continue
                self.instances[name] = rec
                if rec.on_instantiate:
                    transform_function(rec.on_instantiate)(Site(self, rec, rec.torch, updated), name)
        finally:
            self.pos_stack.pop()
        return updated

    def _bind_instances(self, original: cst.Assign, updated: cst.Assign, rec: ApiRecord) -> None:
        for target in original.targets:
            name = dotted(target.target)
            if name is None:
                continue
            self.instances[name] = rec
            if rec.on_instantiate:
                site = Site(self, rec, rec.torch, updated)
                transform_function(rec.on_instantiate)(site, name)


# containers a factory function returns whose layers may depend on the training mode
_MODE_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})

# torch functions returning the object they are given (converted to that object)
_RETURNS_FIRST_ARGUMENT = frozenset({"torch.compile"})

def _own_returns(fn: cst.FunctionDef) -> list[cst.Return]:
    """The `return` statements of `fn` itself, not of the functions it defines (a generated step)."""
    found, todo = [], list(fn.body.children)
    while todo:
        n = todo.pop()
        if isinstance(n, cst.Return):
            found.append(n)
        elif not isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            todo.extend(n.children)
    return found


# Module methods that return the module itself
_RETURNS_SELF = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "requires_grad_"})

# Python's unary operators that a record `torch.Tensor.__<dunder>__` may convert, and their tokens
_UNARY_DUNDERS = {cst.BitInvert: "__invert__"}
_UNARY_TOKENS = {"~": "__invert__"}

# Node types with a visit_<Node>_<field> hook of the Rewriter's own (the base class has no-op ones
# for all; libcst calls on_visit_attribute for every field of every visited node)
_FIELD_HOOK_TYPES = frozenset(getattr(cst, name.split("_")[1]) for name in vars(Rewriter)
                              if re.fullmatch(r"visit_[A-Z][A-Za-z]*_[a-z]\w*", name))

# Whitespace, comments and punctuation: nothing in them is converted, so neither they nor their
# whitespace children are visited (about half the nodes of a module).
_TRIVIA = TRIVIA_TYPES
_HOOKS: dict[tuple, object] = {}


def _hook(kind: type, pattern: str, visitor):
    """The visitor's hook method for a node type (`visit_` + `Call`, `visit_{}_name`...), looked
    up once per type instead of by name on every node."""
    key = (type(visitor), kind, pattern)
    try:
        return _HOOKS[key]
    except KeyError:
        name = pattern.format(kind.__name__) if "{}" in pattern else pattern + kind.__name__
        _HOOKS[key] = found = getattr(type(visitor), name, None)
        return found


class _LazyPos:
    """(line, col) of a node, computed on first use (most calls are never reported); a node
    with no position (rebuilt by a pass) takes the enclosing one's, as PositionProvider's
    absence did."""
    __slots__ = ("rw", "node", "near", "outer", "value")

    def __init__(self, rw: Rewriter, node, near, outer) -> None:
        self.rw, self.node, self.near, self.outer, self.value = rw, node, near, outer, None

    def get(self) -> tuple[int, int]:
        if self.value is None:
            found = self.rw.positions.get(self.node, near=self.near)
            if found is not None:
                self.value = (found.start.line, found.start.column + 1)
            else:
                self.value = tuple(self.outer) if self.outer is not None else (1, 1)
            self.rw = self.node = self.near = self.outer = None
        return self.value

    def __iter__(self):
        return iter(self.get())

    def __getitem__(self, i):
        return self.get()[i]

    def __eq__(self, other) -> bool:
        return self.get() == (other.get() if isinstance(other, _LazyPos) else other)

    def __hash__(self) -> int:
        return hash(self.get())

    def __repr__(self) -> str:
        return repr(self.get())


def _method_call(site: Site) -> cst.BaseExpression:
    target = site.record.target
    call = site.node
    if target.startswith("."):
        func = call.func.with_changes(attr=cst.Name(target[1:]))
        return call.with_changes(func=func, args=_respace(call.args, site.standard_args()))
    if not target:
        return call.with_changes(args=_respace(call.args, site.standard_args()))
    args = [cst.Arg(site.receiver), *site.standard_args()]
    return cst.Call(func=site.ref(target), args=args)


def _is_type_test(node: cst.Comparison) -> bool:
    """`type(m) == nn.Linear`, `type(m) is X`, `type(m) in (A, B)`: classes only compared."""
    left = node.left
    return (isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "type"
            and all(isinstance(c.operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot, cst.In, cst.NotIn))
                    for c in node.comparisons))


def _describe(exc: Exception) -> str:
    """An exception as one stable line (no object addresses: markers must not change between runs)."""
    return re.sub(r" at 0x[0-9a-f]+", "", f"{type(exc).__name__}: {exc}")


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.SimpleString, cst.Tuple, cst.List)


def atom(node: cst.BaseExpression, attribute: bool = False) -> cst.BaseExpression:
    """`node` safe to use as an operand (`a + b` -> `(a + b)`), or with `attribute` as the
    receiver of `.attr` (`(2).x`, `(a + b).astype(...)`): parenthesised unless it binds tighter
    than any operator."""
    numbers = (cst.Integer, cst.Float) if attribute else ()
    if (isinstance(node, _ATOMS) and not isinstance(node, numbers)) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _keep_parens(old: cst.BaseExpression, new):
    """A replacement keeps the parentheses around the node it replaces: they may be what makes
    a multi-line expression legal (`return (\n x.pow(2)\n .sum(-1)\n)`)."""
    if old.lpar and isinstance(new, cst.BaseExpression) and not new.lpar and not _is_removed(new):
        return new.with_changes(lpar=old.lpar, rpar=old.rpar)
    return new


def _differences(rec: ApiRecord) -> str:
    parts = [f"{k}->{v}" for k, v in rec.rename.items()]
    parts += [f"{k} transformed" for k in rec.values]
    parts += [f"{k}={v}" for k, v in rec.pin.items()]
    if rec.transform:
        parts.append(f"see {rec.transform}")
    return ", ".join(parts)


def _is_removed(node) -> bool:
    return isinstance(node, cst.Name) and node.value == REMOVED_NAME


class _FindRemoved(cst.CSTVisitor):
    found = False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == REMOVED_NAME:
            self.found = True


class _ReplaceRemoved(cst.CSTTransformer):
    def leave_Name(self, original, updated):
        return cst.Name("None") if updated.value == REMOVED_NAME else updated


def _only_pass(block) -> bool:
    """A block holding nothing but `pass`, without comments."""
    if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
        return False
    stmt = block.body[0]
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Pass) \
        and not any(line.comment for line in stmt.leading_lines) and not stmt.trailing_whitespace.comment


def _same_block(a, b) -> bool:
    """The same statements (comments and blank lines aside)."""
    def code(block) -> list[str]:
        stmts = block.body if isinstance(block, cst.IndentedBlock) else [cst.SimpleStatementLine(list(block.body))]
        return [_CODE.code_for_node(s.with_changes(leading_lines=[])).strip() for s in stmts]
    return code(a) == code(b)


_CODE = cst.Module([])


def _is_noop(original: cst.BaseSmallStatement, updated: cst.BaseSmallStatement) -> bool:
    """Statements a conversion emptied: a removed call, `model` left of `model.to(dev)`,
    `x = x` left of `x = x.to(dev)`."""
    if isinstance(updated, cst.Expr):
        if _is_removed(updated.value):
            return True
        return isinstance(original, cst.Expr) and isinstance(original.value, cst.Call) and \
            isinstance(updated.value, (cst.Name, cst.Attribute))
    if isinstance(updated, cst.Assign) and all(_is_removed(t.target) for t in updated.targets):
        return True  # a setting with nothing to set (`torch.backends.cudnn.benchmark = True`)
    if isinstance(updated, cst.Assign) and len(updated.targets) == 1 and isinstance(original, cst.Assign):
        if original.value.deep_equals(updated.value):
            return False
        target, value = updated.targets[0].target, updated.value
        if isinstance(value, cst.Tuple) and isinstance(target, cst.Tuple):
            return len(value.elements) == len(target.elements) and all(
                isinstance(v.value, (cst.Name, cst.Attribute)) and v.value.deep_equals(t.value)
                for v, t in zip(value.elements, target.elements))
        return isinstance(value, (cst.Name, cst.Attribute)) and target.deep_equals(value)
    return False


def _with_markers(stmt: cst.BaseStatement, markers: list[str], header=()) -> cst.BaseStatement:
    existing = {line.comment.value for line in [*header, *stmt.leading_lines] if line.comment is not None}
    new = [cst.EmptyLine(comment=cst.Comment(m)) for m in dict.fromkeys(markers) if m not in existing]
    if not new:
        return stmt
    return stmt.with_changes(leading_lines=[*stmt.leading_lines, *new])


def _call_prefix(stmt) -> str | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
            isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call):
        return dotted(stmt.body[0].value.func)
    return None


def _drop_superseded(body: list, implicit: set[int]) -> list:
    """An inserted default (`model.set_train(True)` after construction) is dropped when the
    program's next statement makes the same call itself."""
    out = []
    for i, stmt in enumerate(body):
        if id(stmt) in implicit and i + 1 < len(body):
            prefix = _call_prefix(stmt)
            if prefix is not None and _call_prefix(body[i + 1]) == prefix:
                continue
        out.append(stmt)
    return out
