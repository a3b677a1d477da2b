"""Attribute names that follow the layer: `emb.weight` -> `emb.embedding_table`, `bn.running_mean`
-> `bn.moving_mean`, `fc.in_features` -> `fc.in_channels`, wherever the program reads or writes
them (init code, `apply` functions, weight tying, subclasses of a layer).

A structural pass on torch names (before the table-driven pass). The rename of an attribute
depends on the class of the object it is read from, so the pass first learns the classes: the
layers each class of the file assigns to `self.x`, the variables assigned from constructor calls,
the items of ModuleList/Sequential/ModuleDict, and in `if isinstance(m, nn.X):` (or DCGAN-style
`if classname.find('BatchNorm') != -1:`) the narrowed class. Parameter names come from
rules/weights.toml (`rename`), other attributes from the `attributes` field of the layer's record
in rules/api/. Where the class is unknown and the attribute is one that some layer of the file
renames, the statement is marked instead of guessed.

Parameter names written as strings follow too: name filters in loops over `named_parameters()`
(`'bias' in n`, `n.endswith('weight')`, weight-decay lists), `state_dict()` keys. Writes to
attributes MindSpore reads only at construction (the record's `fixed`), and `.grad` read from a
layer's parameter, are marked.

The same pass turns a ModuleDict that holds ModuleList/ModuleDict/Sequential values (MindSpore's
CellDict rejects them) into a plain Module with those children as attributes: the parameter names
(`transformer.h.0.weight`) stay as torch's, so weight mapping still works.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import libcst as cst

from msmigrate.dataflow import effects
from msmigrate.mapping import load_table
from msmigrate.names import TRIVIA_TYPES, ScopeStack, dotted, is_source, is_statement_type, params_of, resolve, walk

CONTAINERS = ("torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict")
USUAL_ALIASES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional"}


@functools.lru_cache(maxsize=None)
def attribute_renames() -> dict[str, dict[str, str]]:
    """torch layer class -> {torch attribute: MindSpore attribute (may be dotted)}."""
    from msmigrate.weights import load_rules

    out: dict[str, dict[str, str]] = {}
    for cls, rule in load_rules().items():
        renames = {k: v for k, v in rule.rename.items() if "." not in k}
        if renames:
            out[cls] = renames
    for rec in load_table().by_name.values():
        if rec.attributes:
            out.setdefault(rec.torch, {}).update(rec.attributes)
    return out


@functools.lru_cache(maxsize=None)
def _renamed_words() -> frozenset[str]:
    return frozenset(a for table in attribute_renames().values() for a in table)


# attributes of torch layers (family in the class name) that MindSpore's layers do not have
MISSING_ATTRIBUTES = {
    "num_batches_tracked": ("BatchNorm", "MindSpore's BatchNorm layers keep no count of the batches they "
                                         "normalised in training (torch's num_batches_tracked, which only "
                                         "momentum=None uses): count the train steps yourself"),
}
# attribute words only torch's layers have: on a receiver of unknown class they are a layer's
_LAYER_ONLY_WORDS = frozenset({"running_mean", "running_var", *MISSING_ATTRIBUTES})


@functools.lru_cache(maxsize=None)
def _watched_words() -> frozenset[str]:
    """Attribute words the pass reads: those some layer renames, those MindSpore's lack."""
    return _renamed_words() | frozenset(MISSING_ATTRIBUTES)


@functools.lru_cache(maxsize=None)
def _fixed_words() -> frozenset[str]:
    return frozenset(a for rec in load_table().by_name.values() for a in rec.fixed)


@functools.lru_cache(maxsize=None)
def _hint() -> re.Pattern:
    return re.compile(rf"{_attribute_pattern()}|\bModuleDict\b")


@functools.lru_cache(maxsize=None)
def _attribute_pattern() -> str:
    """`.weight` (an attribute access) or `'bias'` / `'ln.weight'` (a parameter name in quotes);
    `.grad` (_check_grad)."""
    attrs = "|".join(sorted(_watched_words() | _fixed_words()))
    return rf"\.\s*(?:{attrs}|grad)\b|['\"](?:[\w.]*\.)?(?:{attrs})['\"]"


@dataclass(frozen=True)
class Kind:
    """What an expression holds: a torch layer (`torch.nn.Embedding`) or a class of the program
    (`local=True`); containers know their items."""
    name: str
    local: bool = False
    item: "Kind | None" = None                       # ModuleList/Sequential items (all one kind)
    items: tuple = ()                                # ... each item's kind, when listed literally
    members: tuple[tuple[str, "Kind | None"], ...] = ()   # ModuleDict: key -> kind

    def member(self, key: str) -> "Kind | None":
        return dict(self.members).get(key)


def _template(code: str, **nodes) -> cst.BaseExpression:
    from libcst.helpers import parse_template_expression

    return parse_template_expression(code, **nodes)


def _holds_containers(kind) -> bool:
    """A ModuleDict with ModuleList/ModuleDict/Sequential values (MindSpore's CellDict rejects them)."""
    return isinstance(kind, Kind) and kind.name == "torch.nn.ModuleDict" and \
        any(k is not None and k.name in CONTAINERS for _, k in kind.members)


@dataclass(frozen=True, eq=False)
class Alias:
    """A variable assigned from another expression (`emb = model.tok`): typed where it is used."""
    expr: cst.BaseExpression


@dataclass(frozen=True, eq=False)
class ParameterDict:
    """A variable holding `model.state_dict()` / `dict(model.named_parameters())`: its keys are
    parameter paths of `model`."""
    model: cst.BaseExpression


def _parameter_dict_of(value) -> cst.BaseExpression | None:
    """`m` for `m.state_dict()` and `dict(m.named_parameters())`."""
    if isinstance(value, cst.Call) and dotted(value.func) == "dict" and len(value.args) == 1:
        value = value.args[0].value
        method = "named_parameters"
    else:
        method = "state_dict"
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value == method and not value.args:
        return value.func.value
    return None


UNKNOWN_MODULE = Kind("<module>")   # a module of unknown class (apply() argument, modules() item)
OWN = object()   # an attribute the program's class sets itself (not a layer's, never renamed)


@dataclass
class ClassInfo:
    name: str
    bases: list = field(default_factory=list)     # Kind of each base the pass knows
    attrs: dict = field(default_factory=dict)     # self.x -> Kind, or OWN (set, kind unknown)


def _union(kinds):
    """The one kind all items share, else None."""
    kinds = list(kinds)
    if not kinds or any(k is None for k in kinds):
        return None
    return kinds[0] if all(k == kinds[0] for k in kinds) else None


class _Analysis(cst.CSTVisitor):
    """Classes, their layer attributes, and variables assigned from constructor calls."""

    def __init__(self, ctx, project_classes: dict[str, cst.ClassDef]) -> None:
        self.ctx = ctx
        # statements naming no torch binding, class, or container hold no layer assignment
        words = {b for b, q in ctx.names.imports.items() if is_source(q)}
        words |= {b for scope in ctx.names.scopes.values() for b, q in scope.items() if is_source(q)}
        words |= set(ctx.names.classes) | set(project_classes) | {"state_dict", "named_parameters"}
        # and the variables whose attributes may be renamed (`emb = model.tok` ... `emb.weight`)
        words |= set(re.findall(rf"\b(\w+)\s*\.\s*(?:{'|'.join(sorted(_watched_words()))})\b", ctx.source))
        self.wants = ctx.statements_naming(words)
        self.skipped: set[int] = set()
        self.scopes = ScopeStack(dict(ctx.names.imports))
        self.classes: dict[str, ClassInfo] = {}
        self.variables: dict[int, dict[str, Kind | None]] = {}   # id(scope node) -> name -> kind
        self.scope_nodes: list = [ctx.module]
        self.class_stack: list[ClassInfo] = []
        self.self_names: list[str | None] = []
        self.created: set[str] = set()      # torch layer classes the program constructs
        self.project_classes = project_classes
        for name in project_classes:
            self._learn_class(project_classes[name])

    def _learn_class(self, node: cst.ClassDef) -> None:
        """A class from another project file: its code comes without its file's imports, so
        torch is assumed under its usual aliases there."""
        saved = self.scope_nodes, self.class_stack, self.self_names, self.scopes, self.wants
        self.scope_nodes, self.class_stack, self.self_names = [node], [], []
        self.scopes = ScopeStack({**USUAL_ALIASES, **self.ctx.names.imports})
        self.wants = lambda stmt: True
        node.visit(self)
        self.scope_nodes, self.class_stack, self.self_names, self.scopes, self.wants = saved

    def on_visit(self, node) -> bool:
        # statements and their blocks only: assignments read their value themselves
        kind = type(node)
        if isinstance(node, cst.BaseExpression) or kind in TRIVIA_TYPES or (
                is_statement_type(kind) and not self.wants(node)):
            self.skipped.add(id(node))
            return False
        return super().on_visit(node)

    def on_leave(self, original) -> None:
        if id(original) in self.skipped:
            self.skipped.discard(id(original))
            return
        super().on_leave(original)

    # ---- kinds of expressions at analysis time --------------------------------------
    def call_kind(self, call: cst.Call) -> Kind | None:
        q = self.scopes.resolve(call.func)
        name = dotted(call.func)
        if name in self.classes or (name in self.ctx.project and name in self.project_classes):
            return Kind(name, local=True)
        if not is_source(q):
            return None
        if q.endswith(".from_pretrained"):   # nn.Embedding.from_pretrained(w): an Embedding
            q = q.rsplit(".", 1)[0]
        last = q.rsplit(".", 1)[-1]
        if not (q.startswith("torch.nn.") and last[:1].isupper()):
            return None
        self.created.add(q)
        named = self.ordered_members(call) if q == "torch.nn.Sequential" else None
        if named is not None:   # `Sequential(OrderedDict([('bn1', nn.BatchNorm2d(4)), ...]))`: seq.bn1
            kinds = list(named.values())
            return Kind(q, item=_union(kinds), items=tuple(kinds), members=tuple(named.items()))
        if q in ("torch.nn.ModuleList", "torch.nn.Sequential"):
            kinds = self.item_kinds(call, q)
            listed = q == "torch.nn.Sequential" or (call.args and isinstance(call.args[0].value, (cst.List, cst.Tuple)))
            return Kind(q, item=_union(kinds), items=tuple(kinds) if listed else ())
        if q == "torch.nn.ModuleDict":
            members = self.dict_members(call.args[0].value) if call.args else {}
            return Kind(q, members=tuple((members or {}).items()))
        return Kind(q)

    def value_kind(self, value) -> Kind | None:
        if isinstance(value, cst.Call):
            return self.call_kind(value)
        return None

    def variable_kind(self, value):
        """A variable's value: a constructor's Kind, or an Alias of a name/attribute/item."""
        if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
            return Alias(value)
        model = _parameter_dict_of(value)
        if model is not None:
            return ParameterDict(model)
        return self.value_kind(value)

    def item_kinds(self, call: cst.Call, q: str) -> list:
        if q == "torch.nn.Sequential":
            if len(call.args) == 1 and isinstance(call.args[0].value, cst.Call) and \
                    dotted(call.args[0].value.func) in ("OrderedDict", "collections.OrderedDict"):
                return [None]
            return [self.value_kind(a.value) if not a.star else None for a in call.args]
        if not call.args:
            return [None]
        seq = call.args[0].value
        if isinstance(seq, (cst.List, cst.Tuple)):
            return [self.value_kind(e.value) if isinstance(e, cst.Element) else None for e in seq.elements]
        if isinstance(seq, (cst.ListComp, cst.GeneratorExp)):
            return [self.value_kind(seq.elt)]
        return [None]

    def ordered_members(self, call: cst.Call) -> dict | None:
        """`Sequential(OrderedDict([('conv1', nn.Conv2d(...)), ...]))` -> {name: kind}."""
        if len(call.args) != 1 or not isinstance(call.args[0].value, cst.Call) or \
                dotted(call.args[0].value.func) not in ("OrderedDict", "collections.OrderedDict"):
            return None
        inner = call.args[0].value
        if len(inner.args) != 1 or not isinstance(inner.args[0].value, (cst.List, cst.Tuple)):
            return None
        out = {}
        for el in inner.args[0].value.elements:
            pair = el.value if isinstance(el, cst.Element) else None
            if not (isinstance(pair, cst.Tuple) and len(pair.elements) == 2
                    and isinstance(pair.elements[0].value, cst.SimpleString)):
                return None
            out[pair.elements[0].value.evaluated_value] = self.value_kind(pair.elements[1].value)
        return out

    def dict_members(self, value) -> dict | None:
        """`dict(a=..., b=...)` or `{'a': ..., 'b': ...}` -> {key: kind}."""
        if isinstance(value, cst.Call) and dotted(value.func) == "dict" and \
                all(a.keyword is not None for a in value.args):
            return {a.keyword.value: self.value_kind(a.value) for a in value.args}
        if isinstance(value, cst.Dict):
            out = {}
            for el in value.elements:
                if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                    return None
                out[el.key.evaluated_value] = self.value_kind(el.value)
            return out
        return None

    # ---- scopes ------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = self.classes.setdefault(node.name.value, ClassInfo(node.name.value))
        for base in node.bases:
            q = self.scopes.resolve(base.value)
            name = dotted(base.value)
            if is_source(q):
                info.bases.append(Kind(q))
            elif name is not None:
                info.bases.append(Kind(name, local=True))
        self.class_stack.append(info)
        self.scope_nodes.append(node)
        self.scopes.push_class(node, self.ctx.known_scope(node))

    def leave_ClassDef(self, node) -> None:
        self.class_stack.pop()
        self.scope_nodes.pop()
        self.scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = params_of(node.params)
        in_class = isinstance(self.scope_nodes[-1], cst.ClassDef)
        self.self_names.append(params[0] if in_class and params else None)
        self.scope_nodes.append(node)
        self.scopes.push_function(node, self.ctx.known_scope(node))

    def leave_FunctionDef(self, node) -> None:
        self.self_names.pop()
        self.scope_nodes.pop()
        self.scopes.pop()

    def _bind(self, target, kind, variable=None) -> None:
        name = dotted(target)
        if name is None:
            return
        owner = self.self_names[-1] if self.self_names else None
        if owner and self.class_stack and name.startswith(owner + ".") and name.count(".") == 1:
            attrs = self.class_stack[-1].attrs
            attr = name.split(".", 1)[1]
            if attr in attrs and attrs[attr] != kind:
                attrs[attr] = OWN
            else:
                attrs[attr] = kind if kind is not None else OWN
            return
        if "." in name:
            return
        scope = self.variables.setdefault(id(self.scope_nodes[-1]), {})
        if name in scope and scope[name] != variable:
            scope[name] = None   # assigned several things: unknown
        else:
            scope[name] = variable

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(t.target, self.value_kind(node.value), self.variable_kind(node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, self.value_kind(node.value), self.variable_kind(node.value))


class _NameFilters(cst.CSTVisitor):
    """Parameter-name tests in loops over `named_parameters()`: `'bias' in n`, `n.endswith(...)`,
    `any(nd in n for nd in no_decay)` (the list `no_decay` is recorded)."""

    def __init__(self, wants) -> None:
        self.wants = wants
        self.name_vars: list[str] = []
        self.literals: dict[int, tuple] = {}   # id(string in a test) -> (its text, the loop's model)
        self.lists: set[str] = set()           # names of string lists tested against names
        self.suffixes: dict[int, tuple] = {}   # id(string argument of n.endswith/startswith)
        self.paths: dict[int, tuple] = {}      # id(string compared with ==) -> (text, model)
        self.owners: list = []                 # receivers of the named_parameters() calls entered
        self.entered: list[bool] = []
        self.skipped: set[int] = set()

    def on_visit(self, node) -> bool:
        kind = type(node)
        if kind in TRIVIA_TYPES or (is_statement_type(kind) and not self.name_vars and not self.wants(node)):
            self.skipped.add(id(node))
            return False
        return super().on_visit(node)

    def on_leave(self, original) -> None:
        if id(original) in self.skipped:
            self.skipped.discard(id(original))
            return
        super().on_leave(original)

    def _enter(self, target, it) -> bool:
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and \
                it.func.attr.value == "named_parameters" and isinstance(target, cst.Tuple) and \
                target.elements and isinstance(target.elements[0].value, cst.Name):
            self.name_vars.append(target.elements[0].value.value)
            self.owners.append(it.func.value)
            return True
        return False

    def _record(self, literal: cst.SimpleString, table: dict) -> None:
        table[id(literal)] = (literal.evaluated_value, self.owners[-1] if self.owners else None)

    def visit_For(self, node) -> None:
        self.entered.append(self._enter(node.target, node.iter))

    def leave_For(self, node) -> None:
        if self.entered.pop():
            self.name_vars.pop()
            self.owners.pop()

    def visit_CompFor(self, node) -> None:
        self._enter(node.target, node.iter)   # inside its statement: not left (names only widen)

    def visit_Comparison(self, node) -> None:
        if not self.name_vars or len(node.comparisons) != 1:
            return
        comp = node.comparisons[0]
        if isinstance(comp.operator, (cst.In, cst.NotIn)) and isinstance(comp.comparator, cst.Name) and \
                comp.comparator.value in self.name_vars and isinstance(node.left, cst.SimpleString):
            self._record(node.left, self.literals)
        elif isinstance(comp.operator, (cst.Equal, cst.NotEqual)):   # n == 'fc.weight'
            for name, literal in ((node.left, comp.comparator), (comp.comparator, node.left)):
                if isinstance(name, cst.Name) and name.value in self.name_vars and \
                        isinstance(literal, cst.SimpleString):
                    self._record(literal, self.paths)

    def visit_GeneratorExp(self, node) -> None:
        # any(nd in n for nd in no_decay)
        elt = node.elt
        if self.name_vars and isinstance(elt, cst.Comparison) and len(elt.comparisons) == 1 and \
                isinstance(elt.comparisons[0].operator, cst.In) and \
                isinstance(elt.comparisons[0].comparator, cst.Name) and \
                elt.comparisons[0].comparator.value in self.name_vars and \
                isinstance(node.for_in.iter, cst.Name):
            self.lists.add(node.for_in.iter.value)

    def visit_Call(self, node) -> None:
        func = node.func
        if self.name_vars and isinstance(func, cst.Attribute) and func.attr.value in ("endswith", "startswith") \
                and isinstance(func.value, cst.Name) and func.value.value in self.name_vars and \
                len(node.args) == 1 and isinstance(node.args[0].value, cst.SimpleString):
            self._record(node.args[0].value, self.suffixes)


# ---------------------------------------------------------------------------------------
# The rewrite
# ---------------------------------------------------------------------------------------

class LayerAttributePass(cst.CSTTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return bool(_hint().search(source))

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.reporter = ctx.reporter
        self.positions = ctx.positions
        self.config = ctx.module.config_for_parsing
        project_classes = {}
        for name, code in ctx.project_classes.items():
            try:
                stmt = cst.parse_statement(code)
            except cst.ParserSyntaxError:
                continue
            if isinstance(stmt, cst.ClassDef):
                project_classes[name] = stmt
        self.analysis = analysis = _Analysis(ctx, project_classes)
        ctx.module.visit(analysis)
        self.renames = attribute_renames()
        self.scopes = ScopeStack(dict(ctx.names.imports))
        self.scope_nodes: list = [ctx.module]
        self.class_stack: list[str] = []
        self.self_names: list[str | None] = []
        self.narrowed: list[dict[str, tuple]] = []     # name -> tuple of possible kinds
        self.loop_vars: list[dict[str, Kind | None]] = [{}]
        self.parameter_vars: list[set[str]] = [set()]   # loop names bound to a network's parameters
        self.class_names: dict[str, str] = {}          # var holding X.__class__.__name__ -> X
        self.notes: list[list[tuple[str, str]]] = []   # per statement: (status, message)
        self.statements: list[cst.CSTNode] = []         # the statements being visited, innermost last
        # statements that can hold a renamed attribute, a class-name test or a ModuleDict
        # (and the names of ModuleDicts that become plain Modules: their subscripts change)
        flattened = {name for scope in [*(c.attrs for c in analysis.classes.values()),
                                        *analysis.variables.values()]
                     for name, k in scope.items() if _holds_containers(k)}
        filters = _NameFilters(ctx.statements_naming({"named_parameters"}))
        if "named_parameters" in ctx.source:
            ctx.module.visit(filters)
        self.name_filters = filters
        self.wants = self._statements(ctx, {"ModuleDict", "__name__"} | flattened | filters.lists)
        self.skipped: set[int] = set()
        self.changes = 0              # rewrites made so far
        self.literal_renames: dict[int, cst.SimpleString] = {}   # class-name literals to rewrite
        self.class_name_notes: dict[int, str] = {}
        self.resolving: set = set()   # aliases being typed (a = b; b = a)
        self.class_exprs: dict = {}   # torch class -> how an isinstance() test spelled it
        self.store_targets: set[int] = set()   # attributes assigned to (cannot be chosen by class)
        self.flattened: set[str] = set()   # ModuleDicts made plain Modules (as the code names them)
        self.change_marks: list[int] = []

    @staticmethod
    def _statements(ctx, words):
        """Statements that can hold what this pass rewrites: an attribute access `.weight`, a
        quoted parameter name `'bias'` (name filters), or one of `words`."""
        if ctx.source_map is None:
            return lambda stmt: True
        from msmigrate.sourcemap import Focus

        return Focus(ctx.source, ctx.source_map, words, (), _attribute_pattern()).wants

    # ---- scopes ------------------------------------------------------------------
    def visit_ClassDef(self, node) -> None:
        self.class_stack.append(node.name.value)
        self.scope_nodes.append(node)
        self.scopes.push_class(node, self.ctx.known_scope(node))

    def leave_ClassDef(self, original, updated):
        self.class_stack.pop()
        self.scope_nodes.pop()
        self.scopes.pop()
        return updated

    def visit_FunctionDef(self, node) -> None:
        params = params_of(node.params)
        in_class = isinstance(self.scope_nodes[-1], cst.ClassDef)
        self.self_names.append(params[0] if in_class and params else None)
        self.scope_nodes.append(node)
        self.scopes.push_function(node, self.ctx.known_scope(node))
        self.loop_vars.append({})
        self.parameter_vars.append(set())
        self.narrowed.append({})

    def leave_FunctionDef(self, original, updated):
        self.self_names.pop()
        self.scope_nodes.pop()
        self.scopes.pop()
        self.loop_vars.pop()
        self.parameter_vars.pop()
        self.narrowed.pop()
        return updated

    # ---- statements: markers ------------------------------------------------------
    def on_visit(self, node) -> bool:
        kind = type(node)
        if (kind in TRIVIA_TYPES and kind is not cst.SimpleString) or (
                is_statement_type(kind) and not self.wants(node)):
            self.skipped.add(id(node))
            return False
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.notes.append([])
            self.statements.append(node)
        self.change_marks.append(self.changes)
        return super().on_visit(node)

    def on_leave(self, original, updated):
        if id(original) in self.skipped:
            self.skipped.discard(id(original))
            return original
        result = super().on_leave(original, updated)
        mark = self.change_marks.pop()
        if result is not updated:
            self.changes += 1
        elif self.changes == mark:
            result = original   # unchanged subtrees keep their identity (and their positions)
        if isinstance(original, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.statements.pop()
            notes = self.notes.pop()
            if notes and isinstance(result, cst.CSTNode):
                self.changes += 1
                pos = self.positions.get(original)
                line, col = (pos.start.line, pos.start.column + 1) if pos is not None else (1, 1)
                lines = list(result.leading_lines)
                existing = {ln.comment.value for ln in lines if ln.comment is not None}
                for status, message in dict.fromkeys(notes):
                    marker = self.reporter.flag(status, message, line, col)
                    if marker not in existing:   # converting converted code adds nothing
                        lines.append(cst.EmptyLine(comment=cst.Comment(marker)))
                result = result.with_changes(leading_lines=lines)
        return result

    def _note(self, status: str, message: str) -> None:
        if self.notes:
            self.notes[-1].append((status, message))

    # ---- narrowing: isinstance, type(m) ==, class-name tests --------------------------
    def visit_If(self, node: cst.If) -> None:
        self._narrowing(node.test)   # before the test is visited: its class-name literals

    def visit_If_body(self, node: cst.If) -> None:
        self.narrowed.append(self._narrowing(node.test))

    def leave_If_body(self, node: cst.If) -> None:
        self.narrowed.pop()

    def visit_BooleanOperation_right(self, node: cst.BooleanOperation) -> None:
        self.narrowed.append(self._narrowing(node.left) if isinstance(node.operator, cst.And) else {})

    def leave_BooleanOperation_right(self, node: cst.BooleanOperation) -> None:
        self.narrowed.pop()

    def _classes_in(self, expr) -> tuple | None:
        """The kinds an isinstance() class argument names (a class or a tuple of classes)."""
        elements = expr.elements if isinstance(expr, cst.Tuple) else [cst.Element(expr)]
        out = []
        for el in elements:
            q = self.scopes.resolve(el.value)
            name = dotted(el.value)
            if is_source(q):
                out.append(Kind(q))
                self.class_exprs[q] = el.value
            elif name in self.analysis.classes:
                out.append(Kind(name, local=True))
            else:
                return None
        return tuple(out)

    def _narrowing(self, test) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        if isinstance(test, cst.BooleanOperation):
            if isinstance(test.operator, cst.And):
                out.update(self._narrowing(test.left))
                out.update(self._narrowing(test.right))
            else:   # `isinstance(m, A) or isinstance(m, B)`
                left, right = self._narrowing(test.left), self._narrowing(test.right)
                for name in left.keys() & right.keys():
                    out[name] = left[name] + right[name]
            return out
        if isinstance(test, cst.Call) and dotted(test.func) == "isinstance" and len(test.args) == 2:
            name = dotted(test.args[0].value)
            kinds = self._classes_in(test.args[1].value)
            if name is not None and kinds:
                out[name] = kinds
            return out
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self._comparison_narrowing(test)
        return out

    def _comparison_narrowing(self, test: cst.Comparison) -> dict[str, tuple]:
        left, comp = test.left, test.comparisons[0]
        op, right = comp.operator, comp.comparator
        # type(m) == nn.Linear / type(m) is nn.Linear / type(m) in (A, B)
        if isinstance(left, cst.Call) and dotted(left.func) == "type" and len(left.args) == 1 and \
                isinstance(op, (cst.Equal, cst.Is, cst.In)):
            name = dotted(left.args[0].value)
            kinds = self._classes_in(right)
            return {name: kinds} if name and kinds else {}
        # classname.find('Conv') != -1, 'Conv' in classname, classname == 'Linear',
        # classname.startswith('Conv')
        pattern, holder, exact = None, None, False
        if isinstance(left, cst.Call) and isinstance(left.func, cst.Attribute) and \
                left.func.attr.value == "find" and len(left.args) == 1 and \
                isinstance(left.args[0].value, cst.SimpleString) and isinstance(op, cst.NotEqual):
            pattern, holder = left.args[0].value.evaluated_value, self._class_name_of(left.func.value)
        elif isinstance(left, cst.SimpleString) and isinstance(op, cst.In):
            pattern, holder = left.evaluated_value, self._class_name_of(right)
        elif isinstance(right, cst.SimpleString) and isinstance(op, cst.Equal):
            pattern, holder, exact = right.evaluated_value, self._class_name_of(left), True
        if pattern is None or holder is None:
            return {}
        kinds = tuple(Kind(q) for q in sorted(self.analysis.created)
                      if (q.rsplit(".", 1)[1] == pattern if exact else pattern in q.rsplit(".", 1)[1]))
        if kinds:
            self._class_name_literal(left if isinstance(left, cst.SimpleString) else
                                     right if isinstance(right, cst.SimpleString) else left.args[0].value,
                                     pattern, kinds, exact)
        return {holder: kinds} if kinds else {}

    def _class_name_literal(self, literal: cst.SimpleString, pattern: str, kinds, exact: bool) -> None:
        """A class-name test must name MindSpore's classes: 'Linear' -> 'Dense'."""
        table = load_table()
        ms_names = set()
        for k in kinds:
            rec = table.lookup(k.name)
            ms_names.add(rec.target.rsplit(".", 1)[-1] if rec is not None and rec.target else k.name)
        if all((m == pattern) if exact else (pattern in m) for m in ms_names):
            return
        clash = [c for c in self.analysis.classes if (c == pattern if exact else pattern in c)]
        if len(ms_names) == 1 and not clash:
            new = ms_names.pop()
            quote = literal.value[:len(literal.value) - len(literal.value.lstrip("rbuRBU"))] + \
                literal.value.lstrip("rbuRBU")[0]
            self.literal_renames[id(literal)] = cst.SimpleString(f"{quote}{new}{quote[-1]}")
        else:
            self.class_name_notes[id(literal)] = (
                f"class-name test {literal.value}: MindSpore's classes are named "
                f"{', '.join(sorted(ms_names))}; adapt the test")

    # ---- parameter-name filters ------------------------------------------------------
    def parameter_names(self, text: str, owner=None) -> list[str]:
        """MindSpore spellings of a torch parameter-name fragment ('bias' -> ['bias', 'beta'],
        'ln_f.weight' -> ['ln_f.gamma']), for the layers this program builds (or the one layer
        whose named_parameters() the loop walks)."""
        head, _, last = text.rpartition(".")
        created = self.analysis.created
        kind = self.kind(owner) if owner is not None else None
        if isinstance(kind, Kind) and not kind.local and kind.name not in CONTAINERS:
            created = {kind.name}
        if not last or not any(last in self.renames.get(q, {}) for q in created):
            return [text]
        if head:
            owner = self.member(None, head.rsplit(".", 1)[-1])
            layers = self._layer_of(owner)
            if layers is not None:
                return sorted({f"{head}.{self.renames.get(q, {}).get(last, last)}" for q in layers})
        return [text] + sorted({f"{head + '.' if head else ''}{self.renames[q][last]}"
                                for q in created if last in self.renames.get(q, {})})

    def leave_Comparison(self, original, updated):
        left = original.left
        if id(left) not in self.name_filters.literals:
            return updated
        text, owner = self.name_filters.literals[id(left)]
        names = self.parameter_names(text, owner)
        if names == [text]:
            return updated
        negated = isinstance(original.comparisons[0].operator, cst.NotIn)
        name = self._code_of(original.comparisons[0].comparator)
        parts = [f"{n!r} {'not in' if negated else 'in'} {name}" for n in names]
        return cst.parse_expression("(" + (" and " if negated else " or ").join(parts) + ")")

    def leave_Assign(self, original, updated):
        if len(original.targets) != 1 or not isinstance(original.targets[0].target, cst.Name) or \
                original.targets[0].target.value not in self.name_filters.lists or \
                not isinstance(original.value, (cst.List, cst.Tuple, cst.Set)):
            return updated
        elements = original.value.elements
        if not all(isinstance(e, cst.Element) and isinstance(e.value, cst.SimpleString) for e in elements):
            return updated
        names = [n for e in elements for n in self.parameter_names(e.value.evaluated_value)]
        names = list(dict.fromkeys(names))
        if names == [e.value.evaluated_value for e in elements]:
            return updated
        kind = {cst.List: "[{}]", cst.Tuple: "({},)", cst.Set: "{{{}}}"}[type(original.value)]
        return updated.with_changes(value=cst.parse_expression(kind.format(", ".join(map(repr, names)))))

    def leave_SimpleString(self, original, updated):
        if id(original) in self.name_filters.suffixes:   # n.endswith('bias') -> n.endswith(('bias', 'beta'))
            names = self.parameter_names(*self.name_filters.suffixes[id(original)])
            if len(names) > 1 or names[0] != original.evaluated_value:
                return cst.parse_expression(f"({', '.join(map(repr, names))},)" if len(names) > 1 else repr(names[0]))
        if id(original) in self.name_filters.paths:   # n == '0.weight': the whole path is known
            text, owner = self.name_filters.paths[id(original)]
            path = self.parameter_path(self.kind(owner), text) if owner is not None else None
            if path is not None and path != text:
                return cst.SimpleString(repr(path))
        if id(original) in self.class_name_notes:
            self._note("review", self.class_name_notes.pop(id(original)))
        return self.literal_renames.pop(id(original), updated)

    def _class_name_of(self, expr) -> str | None:
        """The variable whose class name `expr` is: `m.__class__.__name__`, `type(m).__name__`,
        or a name assigned from one of those."""
        if isinstance(expr, cst.Name) and expr.value in self.class_names:
            return self.class_names[expr.value]
        if isinstance(expr, cst.Attribute) and expr.attr.value == "__name__":
            inner = expr.value
            if isinstance(inner, cst.Attribute) and inner.attr.value == "__class__":
                return dotted(inner.value)
            if isinstance(inner, cst.Call) and dotted(inner.func) == "type" and len(inner.args) == 1:
                return dotted(inner.args[0].value)
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._check_fixed(t.target, node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            holder = self._class_name_of(node.value)
            if holder is not None:
                self.class_names[node.targets[0].target.value] = holder

    def visit_For(self, node: cst.For) -> None:
        self._bind_loop_target(self.loop_vars[-1], node.target, node.iter)
        self._bind_parameters(self.parameter_vars[-1], node.target, node.iter)

    @staticmethod
    def _bind_parameters(names: set, target, it) -> None:
        """`p` of `for p in model.parameters()` / `for n, p in model.named_parameters()`."""
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)):
            return
        if it.func.attr.value == "parameters" and isinstance(target, cst.Name):
            names.add(target.value)
        elif it.func.attr.value == "named_parameters" and isinstance(target, cst.Tuple) and \
                len(target.elements) == 2 and isinstance(target.elements[1].value, cst.Name):
            names.add(target.elements[1].value.value)

    def _bind_loop_target(self, frame: dict, target, it) -> None:
        """The kinds of what a `for` binds: `for fc in self.layers`, and the items of
        `enumerate(layers)` and `zip(a, b)` bound by a tuple target."""
        if isinstance(target, cst.Name):
            frame[target.value] = self._iter_kind(it)
            return
        if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(it, cst.Call) and
                isinstance(it.func, cst.Name) and it.func.value in ("enumerate", "zip") and it.args and
                not any(a.star or a.keyword for a in it.args)):
            return
        names = [e.value for e in target.elements]
        iters = [None, it.args[0].value] if it.func.value == "enumerate" else [a.value for a in it.args]
        if len(names) != len(iters):
            return
        for name, each in zip(names, iters):
            if isinstance(name, cst.Name):
                frame[name.value] = self._iter_kind(each) if each is not None else None

    def _enter_comprehension(self, node) -> None:
        """`sum(e.embedding_dim for e in self.embs)`: the names its `for`s bind, known before
        its element is visited (libcst visits the element first)."""
        frame: dict[str, Kind | None] = {}
        self.loop_vars.append(frame)
        self.parameter_vars.append(set())
        comp_for = node.for_in
        while comp_for is not None:
            self._bind_loop_target(frame, comp_for.target, comp_for.iter)
            self._bind_parameters(self.parameter_vars[-1], comp_for.target, comp_for.iter)
            comp_for = comp_for.inner_for_in

    def _leave_comprehension(self, original, updated):
        self.loop_vars.pop()
        self.parameter_vars.pop()
        return updated

    visit_GeneratorExp = visit_ListComp = visit_SetComp = visit_DictComp = _enter_comprehension
    leave_GeneratorExp = leave_ListComp = leave_SetComp = leave_DictComp = _leave_comprehension

    def _iter_kind(self, it) -> Kind | None:
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and \
                it.func.attr.value in ("modules", "children") and not it.args:
            return UNKNOWN_MODULE
        container = self.kind(it)
        return container.item if isinstance(container, Kind) else None

    # ---- kinds of expressions ------------------------------------------------------
    def kind(self, expr) -> Kind | tuple | None:
        """The Kind of `expr`, a tuple of Kinds (narrowed to several classes), OWN or None."""
        if isinstance(expr, cst.Name):
            name = expr.value
            for frame in reversed(self.narrowed):
                if name in frame:
                    kinds = frame[name]
                    return kinds[0] if len(kinds) == 1 else kinds
            if self.self_names and name == self.self_names[-1] and self.class_stack:
                return Kind(self.class_stack[-1], local=True)
            for frame in reversed(self.loop_vars):
                if name in frame:
                    return frame[name]
            for node in reversed(self.scope_nodes):
                found = self.analysis.variables.get(id(node), {})
                if name in found:
                    value = found[name]
                    if isinstance(value, Alias):
                        if value in self.resolving:
                            return None
                        self.resolving.add(value)
                        try:
                            return self.kind(value.expr)
                        finally:
                            self.resolving.discard(value)
                    return value
            if self._is_apply_function_param(name):
                return UNKNOWN_MODULE
            return None
        if isinstance(expr, cst.Attribute):
            full = dotted(expr)
            for frame in reversed(self.narrowed):   # isinstance(self.norm, nn.LayerNorm)
                if full is not None and full in frame:
                    kinds = frame[full]
                    return kinds[0] if len(kinds) == 1 else kinds
            return self.member(self.kind(expr.value), expr.attr.value)
        if isinstance(expr, cst.Subscript):
            owner = self.kind(expr.value)
            if isinstance(owner, Kind):
                if owner.name == "torch.nn.ModuleDict" and len(expr.slice) == 1 and \
                        isinstance(expr.slice[0].slice, cst.Index) and \
                        isinstance(expr.slice[0].slice.value, cst.SimpleString):
                    return owner.member(expr.slice[0].slice.value.evaluated_value)
                index = expr.slice[0].slice if len(expr.slice) == 1 else None
                if owner.items and isinstance(index, cst.Index):
                    try:
                        i = int(self._code_of(index.value))
                        return owner.items[i]
                    except (ValueError, IndexError):
                        pass
                return owner.item
            return None
        if isinstance(expr, cst.Call):
            return self.analysis.call_kind(expr) if self.scopes else None
        return None

    def member(self, owner, attr: str):
        """The kind of `owner.attr`."""
        if isinstance(owner, Kind):
            if owner.local:
                return self._class_attr(owner.name, attr, set())
            if owner.name == "torch.nn.ModuleDict" or (owner.name == "torch.nn.Sequential" and owner.members):
                return owner.member(attr)
            rec = load_table().lookup(owner.name)
            child = rec.children.get(attr) if rec is not None else None
            return Kind(child) if child else None
        if owner is None:
            # an object of unknown class: the attribute name alone, when every class of the
            # program that sets it sets the same layer
            found = {info.attrs[attr] for info in self.analysis.classes.values() if attr in info.attrs}
            found |= {k.member(attr) for info in self.analysis.classes.values() for k in info.attrs.values()
                      if isinstance(k, Kind) and any(key == attr for key, _ in k.members)}
            if not found or OWN in found or None in found:
                return None
            found = tuple(sorted(found, key=lambda k: k.name))
            return found[0] if len(found) == 1 else found
        return None

    def _class_attr(self, cls: str, attr: str, seen: set):
        info = self.analysis.classes.get(cls)
        if info is None or cls in seen:
            return None
        seen.add(cls)
        if attr in info.attrs:
            return info.attrs[attr]
        for base in info.bases:
            if base.local:
                found = self._class_attr(base.name, attr, seen)
                if found is not None:
                    return found
        return None

    def _layer_of(self, kind) -> list[str] | None:
        """The torch layer classes whose attributes `kind` has (a subclass has its base's)."""
        if isinstance(kind, tuple):
            out = []
            for k in kind:
                layers = self._layer_of(k)
                if layers is None:
                    return None
                out += layers
            return out
        if not isinstance(kind, Kind) or kind is UNKNOWN_MODULE:
            return None
        if not kind.local:
            return [kind.name]
        seen, todo = set(), [kind.name]
        while todo:
            info = self.analysis.classes.get(todo.pop())
            if info is None or info.name in seen:
                continue
            seen.add(info.name)
            for base in info.bases:
                if base.local:
                    todo.append(base.name)
                elif base.name != "torch.nn.Module":
                    return [base.name]
        return ["torch.nn.Module"]

    def _is_apply_function_param(self, name: str) -> bool:
        node = self.scope_nodes[-1]
        if not isinstance(node, cst.FunctionDef):
            return False
        params = params_of(node.params)
        return bool(params) and params[-1] == name and len(params) <= 2 and \
            re.search(rf"\.apply\(\s*(?:self\.)?{re.escape(node.name.value)}\s*\)",
                      self.ctx.source) is not None

    # ---- the rename ----------------------------------------------------------------
    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        attr = original.attr.value
        if attr == "grad":
            self._check_grad(original.value)
        if attr not in _watched_words():
            return updated
        receiver = original.value
        owner = self.kind(receiver)
        if owner is OWN:
            return updated
        if isinstance(owner, Kind) and owner.local and attr in self._own_attrs(owner.name):
            return updated
        layers = self._layer_of(owner)
        if attr in MISSING_ATTRIBUTES:
            family, message = MISSING_ATTRIBUTES[attr]
            if any(family in q for q in (layers if layers is not None else self._unknown_owners(receiver, owner, attr))):
                self._note("review", f"{self._code_of(receiver)}.{attr}: {message}")
            return updated
        if layers is None:
            layers = self._unknown_owners(receiver, owner, attr)
            targets = {self.renames[q][attr] for q in layers}
            # renamed where every layer having the word names it alike (weight: not only the
            # layers that rename it have one)
            if len(targets) != 1 or attr not in _LAYER_ONLY_WORDS:
                if layers:
                    names = "; ".join(f"{new} in {', '.join(q.rsplit('.', 1)[1] for q in layers if self.renames[q][attr] == new)}"
                                      for new in sorted(targets))
                    self._note("review", f"{self._code_of(receiver)}.{attr}: the class of "
                                         f"{self._code_of(receiver)} is not known here; MindSpore names this "
                                         f"attribute {names} (rename it where it is one of those)")
                return updated
        targets = {self.renames.get(q, {}).get(attr, attr) for q in layers}
        if len(targets) > 1:
            choice = self._by_class(original, updated, owner, attr)
            if choice is not None:
                return choice
            self._note("review", f"{self._code_of(receiver)}.{attr}: {self._code_of(receiver)} is one of "
                                 f"{', '.join(q.rsplit('.', 1)[1] for q in layers)}, which MindSpore name "
                                 f"{' / '.join(sorted(targets))}: split the branch by class")
            return updated
        new = targets.pop()
        if new == attr:
            return updated
        if "[" in new:   # `kernel_size[1:]`: a part of MindSpore's attribute is torch's
            return _template(f"{{v}}.{new}", v=updated.value)
        value = updated.value
        parts = new.split(".")
        for part in parts[:-1]:
            value = cst.Attribute(value=value, attr=cst.Name(part))
        return updated.with_changes(value=value, attr=cst.Name(parts[-1]))

    def _by_class(self, original, updated, owner, attr):
        """`m.weight` where isinstance narrowed m to (nn.Linear, nn.Embedding): the attribute
        chosen by class at run time, `(m.embedding_table if isinstance(m, nn.Embedding) else
        m.weight)`; None where that cannot be written (an assignment target, a local class)."""
        if id(original) in self.store_targets or not isinstance(owner, tuple) or \
                not isinstance(original.value, (cst.Name, cst.Attribute)):
            return None
        groups: dict[str, list] = {}
        for k in owner:
            if k.local or k.name not in self.class_exprs:
                return None
            new = self.renames.get(k.name, {}).get(attr, attr)
            if "[" in new:
                return None
            groups.setdefault(new, []).append(self.class_exprs[k.name])
        (last, _), *rest = sorted(groups.items(), key=lambda item: item[0] != attr)   # torch's name last
        code, nodes = f"{{r}}.{last}", {"r": updated.value}
        for i, (new, classes) in enumerate(rest):
            nodes[f"c{i}"] = classes[0] if len(classes) == 1 else cst.Tuple([cst.Element(c) for c in classes])
            code = f"{{r}}.{new} if isinstance({{r}}, {{c{i}}}) else {code}"
        return _template(f"({code})", **nodes)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.store_targets.add(id(node.target))

    def _check_grad(self, param) -> None:
        """`fc.weight.grad`, and `p.grad` of `for p in model.parameters()` (a gradient norm
        logged by hand): a layer's parameter has no .grad in MindSpore."""
        if isinstance(param, cst.Name) and any(param.value in names for names in self.parameter_vars) and \
                self._reads_only(param.value):
            self._note("manual", f"{param.value}.grad ({param.value} a network parameter): MindSpore's Parameters "
                                 f"carry no .grad; the gradients are what the train step's value_and_grad "
                                 f"returns (a norm of them: compute it in the step from those grads)")
            return
        if not isinstance(param, cst.Attribute):
            return
        layer = self.kind(param.value)
        if not isinstance(layer, Kind) or layer.local or layer.name in CONTAINERS or layer is UNKNOWN_MODULE:
            return
        if param.attr.value in ("weight", "bias", *self.renames.get(layer.name, {})):
            self._note("manual", f"{self._code_of(param)}.grad: MindSpore's Parameters carry no .grad; "
                                 f"the gradients are what the train step's value_and_grad returns")

    def _reads_only(self, name: str) -> bool:
        """The simple statement being visited changes no `name` (`p.data.add_(p.grad, alpha=-lr)`,
        `p -= lr * p.grad`: a manual update, which the training-loop pass converts); not a
        compound statement's header (`if p.grad is not None:` guarding one)."""
        stmt = self.statements[-1] if self.statements else None
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        return not any(c == name or c.startswith(name + ".") for c in effects(stmt).changed)

    def _unknown_owners(self, receiver, owner, attr: str) -> list[str]:
        """The torch layer classes a receiver of unknown class may be, for `attr`: those the
        program builds that have it (renamed or missing in MindSpore), where the receiver is
        probably a module, or `attr` is a word only layers have and no class of the program
        sets it."""
        if not (self._probably_module(receiver, owner) or (
                attr in _LAYER_ONLY_WORDS and not any(attr in info.attrs for info in self.analysis.classes.values()))):
            return []
        family = MISSING_ATTRIBUTES.get(attr, ("",))[0]
        return sorted(q for q in self._constructed
                      if attr in self.renames.get(q, {}) or (family and family in q))

    @functools.cached_property
    def _constructed(self) -> frozenset[str]:
        """The torch layer classes the program constructs anywhere (`layers.append(nn.BatchNorm1d(4))`
        too, which the analysis of assignments does not see)."""
        imports = dict(self.ctx.names.imports)
        return frozenset(q for n in walk(self.ctx.module) if isinstance(n, cst.Call)
                         for q in [resolve(n.func, imports) or ""]
                         if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper()) | self.analysis.created

    def _probably_module(self, receiver, owner) -> bool:
        """A receiver of unknown class that is a module: an apply() function's argument, an
        item of modules(), or an attribute of one of the program's classes."""
        if owner is UNKNOWN_MODULE:
            return True
        if isinstance(receiver, cst.Subscript):   # an item of a container (`net[1]`)
            base = self.kind(receiver.value)
            return isinstance(base, Kind) and base.name in CONTAINERS
        if isinstance(receiver, cst.Attribute):
            base = self.kind(receiver.value)
            return isinstance(base, Kind) and base.local
        return False

    # ---- attributes MindSpore reads only at construction ------------------------------
    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_fixed(node.target, None)

    def _check_fixed(self, target, value) -> None:
        if not isinstance(target, cst.Attribute):
            return
        layers = self._layer_of(self.kind(target.value))
        if layers == ["torch.nn.Dropout"] and isinstance(value, (cst.Integer, cst.Float)) and \
                float(value.value) == 0:
            return   # nn.Dropout tests p == 0 when called (Dropout2d/3d do not)
        attr = target.attr.value
        table = load_table()
        hit = sorted({q.rsplit(".", 1)[1] for q in layers or ()
                      if table.lookup(q) is not None and attr in table.lookup(q).fixed})
        if hit:
            self._note("review", f"{self._code_of(target)} = ...: MindSpore's {', '.join(hit)} reads {attr} only "
                                 f"when it is built (its kernel keeps the value): setting it afterwards "
                                 f"changes nothing; pass it to the constructor")

    # ---- ModuleDict holding containers -> a plain Module ------------------------------
    def leave_SimpleStatementLine(self, original, updated):
        if len(original.body) != 1 or not isinstance(original.body[0], cst.Assign):
            return updated
        assign = original.body[0]
        value = assign.value
        if len(assign.targets) != 1 or not isinstance(value, cst.Call) or \
                self.scopes.resolve(value.func) != "torch.nn.ModuleDict" or len(value.args) != 1:
            return updated
        arg = value.args[0].value
        if isinstance(arg, cst.DictComp):   # {k: nn.Sequential(...) for k in names}: generated
            return updated                  # msmigrate_ModuleDict (rules/transforms/models.py)
        members = self.analysis.dict_members(arg)
        if not members or not _holds_containers(Kind("torch.nn.ModuleDict", members=tuple(members.items()))):
            return updated   # CellDict holds it
        target = dotted(assign.targets[0].target)
        if target is None or not isinstance(value.func, cst.Attribute) or \
                not all(key.isidentifier() for key in members):
            self._note("manual", "a ModuleDict holding ModuleList/ModuleDict/Sequential values: MindSpore's "
                                 "CellDict rejects them; build a plain Module with them as attributes")
            return updated
        new_value = updated.body[0].value
        module = new_value.func.with_changes(attr=cst.Name("Module"))
        first = updated.with_changes(body=[updated.body[0].with_changes(
            value=cst.Call(func=module))])
        stmts = [first]
        for key, item in self._dict_items(new_value.args[0].value):
            stmts.append(cst.SimpleStatementLine([cst.Assign(
                targets=[cst.AssignTarget(cst.parse_expression(f"{target}.{key}"))], value=item)]))
        self.flattened.add(target)
        self.changes += 1
        return cst.FlattenSentinel(stmts)

    @staticmethod
    def _dict_items(value) -> list:
        if isinstance(value, cst.Call):
            return [(a.keyword.value, a.value) for a in value.args]
        return [(el.key.evaluated_value, el.value) for el in value.elements]

    def leave_Subscript(self, original: cst.Subscript, updated):
        """`self.transformer['h']` on a ModuleDict made a plain Module: `self.transformer.h`;
        `model.state_dict()['0.weight']`: the key names MindSpore's parameter."""
        name = dotted(original.value)
        index = original.slice[0].slice if len(original.slice) == 1 else None
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            model = self._parameter_dict_model(original.value)
            if model is not None:
                key = self.parameter_path(self.kind(model), index.value.evaluated_value)
                if key is not None and key != index.value.evaluated_value:
                    return updated.with_changes(slice=[updated.slice[0].with_changes(
                        slice=cst.Index(cst.SimpleString(repr(key))))])
        if name not in self.flattened:
            return updated
        index = original.slice[0].slice if len(original.slice) == 1 else None
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) and \
                index.value.evaluated_value.isidentifier():
            return cst.Attribute(value=updated.value, attr=cst.Name(index.value.evaluated_value))
        self._note("manual", f"{name} is a plain Module in the conversion (MindSpore's CellDict cannot "
                             f"hold its ModuleList values): index it with literal keys only")
        return updated

    def _parameter_dict_model(self, expr):
        direct = _parameter_dict_of(expr)
        if direct is not None:
            return direct
        if isinstance(expr, cst.Name):
            for node in reversed(self.scope_nodes):
                found = self.analysis.variables.get(id(node), {})
                if expr.value in found:
                    value = found[expr.value]
                    return value.model if isinstance(value, ParameterDict) else None
        return None

    def parameter_path(self, kind, key: str) -> str | None:
        """A torch parameter path below an object of `kind` ('0.weight', 'ln_f.bias') spelled
        as MindSpore names it; None where a part's class is unknown."""
        parts = key.split(".")
        out = []
        for i, part in enumerate(parts):
            if i == len(parts) - 1:
                layers = self._layer_of(kind)
                if layers is None:
                    return None
                names = {self.renames.get(q, {}).get(part, part) for q in layers}
                if len(names) != 1 or "[" in next(iter(names)):
                    return None
                out.append(names.pop())
                break
            if isinstance(kind, Kind) and kind.items and part.isdigit() and int(part) < len(kind.items):
                kind = kind.items[int(part)]
            elif isinstance(kind, Kind) and kind.item is not None and part.isdigit():
                kind = kind.item
            else:
                layers = self._layer_of(kind)
                if layers is not None and len(layers) == 1 and part in self.renames.get(layers[0], {}):
                    part = self.renames[layers[0]][part]   # a child renamed: linear1 -> dense1
                kind = self.member(kind, parts[i]) if isinstance(kind, Kind) or i == 0 else None
            out.append(part)
            if kind is None or kind is OWN:
                return None
        return ".".join(out)

    def leave_Call(self, original: cst.Call, updated):
        func = original.func
        if isinstance(func, cst.Attribute) and dotted(func.value) in self.flattened and \
                func.attr.value in ("items", "keys", "values", "__len__", "update", "pop"):
            self._note("manual", f"{dotted(func.value)} is a plain Module in the conversion (MindSpore's "
                                 f"CellDict cannot hold its ModuleList values): {func.attr.value}() does not "
                                 f"exist; use name_cells()")
        if self.scopes.resolve(func) == "torch.nn.ModuleList":
            kinds = self.analysis.item_kinds(original, "torch.nn.ModuleList")
            if any(k is not None and k.name == "torch.nn.ModuleDict" for k in kinds):
                self._note("manual", "a ModuleList of ModuleDicts: MindSpore's CellList rejects CellDict "
                                     "items; hold each dict's layers as attributes of a plain Cell")
        return updated

    def _own_attrs(self, cls: str) -> set[str]:
        info = self.analysis.classes.get(cls)
        if info is None:
            return set()
        own = set(info.attrs)
        for base in info.bases:
            if base.local:
                own |= self._own_attrs(base.name)
        return own

    def _code_of(self, node) -> str:
        return self.ctx.module.code_for_node(node)
