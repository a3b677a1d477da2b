"""What MindSpore will compile in one file, and which expressions in it are tensor-valued.

Built on the stdlib `ast` for speed (lint runs at a fraction of `ast.parse` cost). Nothing here
imports torch or mindspore; names are resolved through the file's own imports.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

# Attributes of a Tensor that are compile-time constants, not values.
SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype", "size", "itemsize", "nbytes", "strides"})
# Tensor methods whose result is a compile-time constant.
CONST_METHODS = frozenset({"dim", "ndimension", "numel", "nelement", "is_contiguous",
                           "is_floating_point", "is_complex", "element_size"})
# Builtins whose result never depends on tensor values.
CONST_BUILTINS = frozenset({"len", "isinstance", "issubclass", "type", "hasattr", "getattr",
                            "callable", "range", "id", "str", "repr", "print", "super"})
# MindSpore ops (functions or Primitive classes) whose result is known at compile time.
CONST_OPS = frozenset({"shape", "rank", "dtype", "size", "numel", "Shape", "Rank", "DType", "Size", "get_shape", "typeof",
                       "is_sequence_shape_unknown", "is_sequence_value_unknown", "isconstant"})
# Decorators of functions MindSpore evaluates at compile time (never graph code, constant result).
CONST_DECORATORS = frozenset({"constexpr", "_primexpr", "primexpr", "_constexpr"})
GRAD_TRANSFORMS = frozenset({"mindspore.value_and_grad", "mindspore.grad",
                             "mindspore.ops.value_and_grad", "mindspore.ops.grad",
                             "mindspore.ops.GradOperation"})
JIT_NAMES = frozenset({"mindspore.jit", "mindspore.common.api.jit", "mindspore.common.jit",
                       "mindspore.graph.api.jit", "mindspore.ms_function", "mindspore.common.api.ms_function"})
JIT_CLASS_NAMES = frozenset({"mindspore.jit_class", "mindspore.common.api.jit_class",
                             "mindspore.common.jit_class"})
# First components of relative imports inside mindspore's own package (`from ..cell import Cell`).
MINDSPORE_RELATIVE = frozenset({"ops", "nn", "common", "cell", "layer", "operations", "functional",
                                "composite", "_checkparam", "_extends"})
CONTAINER_LIKE = (ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.DictComp, ast.GeneratorExp)


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


@dataclass(frozen=True)
class External:
    """Facts about this file that come from the other files linted with it (see crossfile.py)."""
    cell_bases: frozenset = frozenset()       # local names of imported Cell classes (bases, instances)
    graph_functions: tuple = ()               # (top-level function, why): called from compiled code elsewhere
    # (function, tensor positions, tensor keywords): what its callers in compiled code pass as
    # tensors, for functions whose every such call site is known (the others: every parameter)
    graph_args: tuple = ()

    def key(self) -> str:
        return repr((sorted(self.cell_bases), sorted(self.graph_functions), sorted(self.graph_args)))


def target_names(target: ast.AST) -> list[str]:
    """Names an assignment target binds (not those inside `a[i] = ` or `a.b = `)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in target_names(e)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


@dataclass
class GraphFunction:
    """A function MindSpore compiles: an entry point (construct, @jit, grad target) or a callee."""
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: ast.ClassDef | None
    why: str
    strict: bool = False
    tensor_params: set[str] = field(default_factory=set)
    tensors: set[str] = field(default_factory=set)
    assigned: dict[str, list[int]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)


class FileModel:
    """Imports, classes and functions of one module, and which of them are graph code."""

    def __init__(self, tree: ast.Module, strict: bool = False, external: "External | None" = None):
        self.tree = tree
        self.strict = strict
        self.external = external or External()
        self.aliases: dict[str, str] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.module_names: set[str] = set()
        self.const_callables: set[str] = set()        # module-level `shape = ops.Shape()`
        self.imports_mindspore = False
        self.imports_torch = False
        self.cell_classes: set[str] = set()
        self.jit_classes: set[str] = set()
        self.graph: dict[ast.AST, GraphFunction] = {}
        self.graph_nodes: set[int] = set()
        self.cell_params: dict[str, set[str]] = {}   # class -> self attrs that hold Parameters/Tensors
        self.cell_children: dict[str, set[str]] = {}  # class -> self attrs that hold Cells/ops
        self.attr_kinds: dict[str, dict[str, str]] = {}  # class -> self attr -> class it was built from
        self.instances: dict[str, str] = {}           # variable -> in-file Cell class it holds
        self.jit_entries: set[str] = set()            # names of jitted functions / wrappers
        self._grad_targets: dict[str, str] = {}       # grad_fn name -> function it differentiates
        self._nested: dict[str, list] = {}             # name -> functions defined inside functions
        self._parent: dict[ast.AST, ast.AST] = {}      # nested function -> the function defining it
        self._scan_module()

    # ---- names -------------------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full

    def is_ms(self, node: ast.AST, *names: str) -> bool:
        """True if `node` names one of the mindspore APIs `names` (given without 'mindspore.')."""
        q = self.qualname(node)
        if not q or not q.startswith("mindspore"):
            return False
        q = q.replace("mindspore.common.api.", "mindspore.").replace("mindspore.common.", "mindspore.")
        return any(q == "mindspore." + n for n in names)

    def _is_cell_base(self, base: ast.AST) -> bool:
        d = dotted(base)
        if d is None:
            return False
        if d in self.cell_classes or d in self.external.cell_bases:
            return True
        q = self.qualname(base) or ""
        last = d.rsplit(".", 1)[-1]
        if q.startswith("mindspore.nn") or q.startswith("mindspore.experimental"):
            return last[:1].isupper()
        # mindspore's own sources import Cell relatively (`from ..cell import Cell`)
        return last in ("Cell", "SequentialCell") or (q.startswith(".") and last.endswith("Cell"))

    def is_jit(self, node: ast.AST) -> tuple[bool, bool]:
        """(is a jit decorator/call, fullgraph=True) for a decorator or a call's func."""
        target, strict = node, False
        if isinstance(node, ast.Call):
            target = node.func
            for kw in node.keywords:
                if kw.arg == "fullgraph" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                    strict = True
        q = self.qualname(target)
        if q and q.replace("mindspore.common.api.", "mindspore.") in JIT_NAMES:
            return True, strict
        return False, strict

    # ---- module scan -------------------------------------------------------------------------
    def _scan_module(self) -> None:
        body = self.tree.body
        for stmt in self._top_level(body):
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.aliases[top] = top
                    self._note_framework(a.name)
            elif isinstance(stmt, ast.ImportFrom):
                mod = ("." * stmt.level) + (stmt.module or "")
                if stmt.level and not stmt.module:
                    mod = "." * stmt.level
                for a in stmt.names:
                    sep = "" if mod.endswith(".") else "."
                    self.aliases[a.asname or a.name] = f"{mod}{sep}{a.name}"
                self._note_framework(mod)
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
                self.module_names.discard(stmt.name)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(stmt.name, stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.module_names.add(n.id)
                v = stmt.value
                if isinstance(v, ast.Call) and (dotted(v.func) or "").rsplit(".", 1)[-1] in CONST_OPS:
                    self.const_callables.update(t.id for t in targets if isinstance(t, ast.Name))
        # mindspore's own package: relative imports inside mindspore resolve to mindspore
        for k, v in list(self.aliases.items()):
            if v.startswith(".") and v.lstrip(".").split(".")[0] in MINDSPORE_RELATIVE:
                self.aliases[k] = "mindspore." + v.lstrip(".")
        for name, cls in self.classes.items():
            for dec in cls.decorator_list:
                q = self.qualname(dec.func if isinstance(dec, ast.Call) else dec) or ""
                if q.replace("mindspore.common.api.", "mindspore.") in JIT_CLASS_NAMES or dotted(dec) == "jit_class":
                    self.jit_classes.add(name)
        changed = True
        while changed:  # Cells through intermediate in-file base classes
            changed = False
            for name, cls in self.classes.items():
                if name not in self.cell_classes and any(self._is_cell_base(b) for b in cls.bases):
                    self.cell_classes.add(name)
                    changed = True
        self._find_entries()
        known = {name: (pos, kws) for name, pos, kws in self.external.graph_args}
        for name, why in self.external.graph_functions:
            if name in self.functions:
                g = self._add(self.functions[name], None, f"called from compiled code: {why}")
                if g is not None:
                    g.tensor_params = self._entry_params(g)
                    if name in known:  # only what the callers pass as tensors
                        a = g.node.args
                        positional = [x.arg for x in a.posonlyargs + a.args]
                        pos, kws = known[name]
                        passed = {positional[i] for i in pos if i < len(positional)} | set(kws)
                        if a.vararg is not None and any(i >= len(positional) for i in pos):
                            passed.add(a.vararg.arg)
                        if a.kwarg is not None and any(k not in positional for k in kws):
                            passed.add(a.kwarg.arg)
                        g.tensor_params &= passed
        self._close_over_callees()

    @staticmethod
    def _top_level(body):
        """Module statements, looking into `if`/`try` blocks (guarded imports)."""
        stack = list(reversed(body))
        while stack:
            stmt = stack.pop()
            yield stmt
            if isinstance(stmt, (ast.If, ast.Try)):
                inner = list(stmt.body) + list(stmt.orelse)
                if isinstance(stmt, ast.Try):
                    for h in stmt.handlers:
                        inner += h.body
                    inner += stmt.finalbody
                stack.extend(reversed(inner))

    def _note_framework(self, mod: str) -> None:
        root = mod.split(".")[0]
        if root == "mindspore":
            self.imports_mindspore = True
        elif root == "torch":
            self.imports_torch = True

    def class_methods(self, cls_name: str) -> dict[str, ast.FunctionDef]:
        """Methods of an in-file class including in-file bases (own definitions win)."""
        out: dict[str, ast.FunctionDef] = {}
        seen = set()
        todo = [cls_name]
        while todo:
            name = todo.pop(0)
            if name in seen or name not in self.classes:
                continue
            seen.add(name)
            cls = self.classes[name]
            for stmt in cls.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.setdefault(stmt.name, stmt)
            todo.extend(dotted(b) for b in cls.bases if dotted(b))
        return out

    def _add(self, fn, cls, why, strict=False) -> GraphFunction | None:
        if fn in self.graph:
            g = self.graph[fn]
            g.strict = g.strict or strict
            return None
        g = GraphFunction(fn, cls, why, strict or self.strict)
        self.graph[fn] = g
        return g

    def _collect_nested(self) -> None:
        """Functions defined inside functions (a training step built in a method: forward_fn,
        grad_fn and the @jit step side by side), found by name from their siblings."""
        for outer in ast.walk(self.tree):
            if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(outer):
                    if node is not outer and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                            and node not in self._parent:
                        self._parent[node] = outer
                        self._nested.setdefault(node.name, []).append(node)

    def function_named(self, name: str, near: ast.AST | None = None):
        """The module-level function `name`, else one defined in the function that defines `near`."""
        if name in self.functions:
            return self.functions[name]
        found = self._nested.get(name, [])
        parent = self._parent.get(near)
        return next((fn for fn in found if self._parent.get(fn) is parent), None) if parent is not None else None

    def _find_entries(self) -> None:
        self._collect_nested()
        # construct of every Cell subclass, and self attributes of Cells
        for name in self.cell_classes:
            cls = self.classes[name]
            params, children, kinds = set(), set(), {}
            for stmt in cls.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if stmt.name == "construct":
                        self._add(stmt, cls, f"construct of Cell '{name}'")
                    if stmt.name != "construct":
                        self._scan_self_attrs(stmt, params, children, kinds)
            self.cell_params[name] = params
            self.cell_children[name] = children
            self.attr_kinds[name] = kinds
        # attributes set up in in-file base classes' __init__ belong to subclasses too
        for name in self.cell_classes:
            todo, seen = [name], set()
            while todo:
                base = todo.pop()
                if base in seen or base not in self.classes:
                    continue
                seen.add(base)
                if base != name and base in self.cell_params:
                    self.cell_params[name] |= self.cell_params[base]
                    self.cell_children[name] |= self.cell_children[base]
                    for k, v in self.attr_kinds[base].items():
                        self.attr_kinds[name].setdefault(k, v)
                todo.extend(dotted(b) for b in self.classes[base].bases if dotted(b))
        # functions registered on a MultitypeFuncGraph: graph code, typed by the registration
        multitype = set()
        for stmt in self.tree.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
                    (dotted(stmt.value.func) or "").endswith("MultitypeFuncGraph"):
                multitype.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        for fn in self.functions.values():
            for dec in fn.decorator_list:
                if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "register" \
                        and isinstance(dec.func.value, ast.Name) and dec.func.value.id in multitype:
                    g = self._add(fn, None, f"registered on MultitypeFuncGraph '{dec.func.value.id}'")
                    if g is not None:
                        names = [a.arg for a in fn.args.args]
                        types = [a.value for a in dec.args if isinstance(a, ast.Constant)]
                        g.tensor_params = {n for n, t in zip(names, types) if t == "Tensor"}
                        g.why = "called from compiled code: " + g.why
        # @jit functions and methods, jit(...) wrappers, grad transforms
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    is_jit, strict = self.is_jit(dec)
                    if is_jit:
                        self._add(node, self._owner(node), "decorated with jit", strict)
                        self.jit_entries.add(node.name)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                call = node.value
                is_jit, strict = self.is_jit(call.func)
                q = self.qualname(call.func) or ""
                if is_jit and call.args:
                    self._mark_named(call.args[0], "wrapped with jit", strict)
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            self.jit_entries.add(t.id)
                elif q in GRAD_TRANSFORMS and call.args and isinstance(call.args[0], ast.Name):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            self._grad_targets[t.id] = call.args[0].id
                elif isinstance(call.func, ast.Name) and (call.func.id in self.cell_classes or
                                                          call.func.id in self.external.cell_bases):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            self.instances[t.id] = call.func.id

    @staticmethod
    def compile_time(fn) -> bool:
        """@constexpr / @_primexpr functions run at compile time on constants."""
        for dec in fn.decorator_list:
            d = dotted(dec.func if isinstance(dec, ast.Call) else dec) or ""
            if d.rsplit(".", 1)[-1] in CONST_DECORATORS:
                return True
        return False

    def _owner(self, fn) -> ast.ClassDef | None:
        for cls in self.classes.values():
            if fn in cls.body:
                return cls
        return None

    def _mark_named(self, target: ast.AST, why: str, strict: bool) -> None:
        if isinstance(target, ast.Name) and target.id in self.functions:
            self._add(self.functions[target.id], None, why, strict)
        elif isinstance(target, ast.Attribute) and target.attr == "construct":
            pass  # construct of a Cell is already graph code

    def _scan_self_attrs(self, fn, params: set[str], children: set[str], kinds: dict[str, str]) -> None:
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        v = node.value
                        if isinstance(v, ast.Call):
                            last = (dotted(v.func) or "").rsplit(".", 1)[-1]
                            kinds[t.attr] = last
                            if last in ("Parameter", "Tensor", "tensor") or last.startswith(("zeros", "ones")):
                                params.add(t.attr)
                            elif last[:1].isupper() or last in self.cell_classes:
                                children.add(t.attr)

    # ---- transitive closure and tensor inference ----------------------------------------------
    def _close_over_callees(self) -> None:
        for _ in range(6):  # a few rounds reach a fixpoint on real code
            before = (len(self.graph), sum(len(g.tensor_params) for g in self.graph.values()))
            for g in list(self.graph.values()):
                self._infer(g)
                self._find_callees(g)
            after = (len(self.graph), sum(len(g.tensor_params) for g in self.graph.values()))
            if after == before:
                break
        for g in self.graph.values():
            self._infer(g)
            for n in ast.walk(g.node):
                self.graph_nodes.add(id(n))

    def _entry_params(self, g: GraphFunction) -> set[str]:
        args = g.node.args
        names = [a for a in args.posonlyargs + args.args + args.kwonlyargs]
        defaults = [None] * (len(args.posonlyargs + args.args) - len(args.defaults)) + list(args.defaults)
        defaults += list(args.kw_defaults)
        out = set()
        for i, (a, d) in enumerate(zip(names, defaults)):
            if i == 0 and g.cls is not None and a.arg in ("self", "cls"):
                continue
            ann = dotted(a.annotation) if a.annotation is not None else None
            if ann in ("int", "float", "bool", "str"):
                continue
            if isinstance(d, ast.Constant):  # literal defaults (incl. None) mark options, not tensors
                continue
            out.add(a.arg)
        for extra in (args.vararg, args.kwarg):
            if extra is not None:
                out.add(extra.arg)
        return out

    def _is_entry(self, g: GraphFunction) -> bool:
        return not g.why.startswith("called from")

    def _infer(self, g: GraphFunction) -> None:
        """Names bound to tensor-valued expressions (flow-insensitive, to a fixpoint)."""
        if self._is_entry(g):
            g.tensor_params = self._entry_params(g)
        g.tensors = set(g.tensor_params)
        g.assigned = {}
        for node in ast.walk(g.node):
            if isinstance(node, ast.Global):
                g.globals.update(node.names)
        for _ in range(4):
            n = len(g.tensors)
            for node in ast.walk(g.node):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension,
                                     ast.withitem, ast.NamedExpr)):
                    self._bind(g, node)
            if len(g.tensors) == n:
                break

    def _bind(self, g: GraphFunction, node) -> None:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.comprehension)):
            targets, value = [node.target], node.iter
            if isinstance(value, ast.Call) and dotted(value.func) == "enumerate" and isinstance(node.target, ast.Tuple) \
                    and len(node.target.elts) == 2:
                targets, value = [node.target.elts[1]], (value.args[0] if value.args else value)
        else:
            targets, value = [node.optional_vars] if node.optional_vars else [], node.context_expr
        if value is None:
            return
        tensor = self.is_tensor(value, g)
        if isinstance(node, ast.AugAssign):
            tensor = tensor or (isinstance(node.target, ast.Name) and node.target.id in g.tensors)
        for t in targets:
            for name in target_names(t):
                if not isinstance(node, ast.comprehension):
                    g.assigned.setdefault(name, []).append(getattr(node, "lineno", 0))
                if tensor:
                    g.tensors.add(name)

    def _find_callees(self, g: GraphFunction) -> None:
        cls_name = g.cls.name if g.cls is not None else None
        methods = self.class_methods(cls_name) if cls_name else {}
        for node in ast.walk(g.node):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            target = None
            if isinstance(f, ast.Name):
                differentiated = self.function_named(self._grad_targets[f.id], g.node) \
                    if f.id in self._grad_targets else None
                if differentiated is not None:
                    self._add(differentiated, None, f"differentiated by '{f.id}', called from compiled code", g.strict)
                    gf = self.graph[differentiated]
                    gf.tensor_params = self._entry_params(gf)
                    continue
                callee_fn = self.function_named(f.id, g.node)
                if callee_fn is not None and f.id not in g.tensors:
                    target = (callee_fn, None, False)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" \
                    and f.attr in methods and methods[f.attr] is not g.node:
                target = (methods[f.attr], self._owner(methods[f.attr]), True)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) and dotted(f.value.func) == "super" \
                    and f.attr in methods:
                target = (methods[f.attr], self._owner(methods[f.attr]), True)
            if target is None:
                continue
            fn, owner, bound = target
            if fn.name == "__init__" or self.compile_time(fn):
                continue
            callee = self.graph.get(fn)
            if callee is None:
                callee = self._add(fn, owner, f"called from compiled '{g.node.name}'", g.strict)
            if callee is None or self._is_entry(callee):
                continue
            params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            if bound and params and params[0] in ("self", "cls"):
                params = params[1:]
            for i, arg in enumerate(node.args):
                if isinstance(arg, ast.Starred):
                    if self.is_tensor(arg.value, g):
                        callee.tensor_params.update(params[i:])
                    break
                if i < len(params) and self.is_tensor(arg, g):
                    callee.tensor_params.add(params[i])
            for kw in node.keywords:
                if kw.arg and self.is_tensor(kw.value, g):
                    callee.tensor_params.add(kw.arg)

    # ---- queries -------------------------------------------------------------------------------
    def is_tensor(self, node: ast.AST, g: GraphFunction) -> bool:
        """Does the value of `node` depend on tensor values (not only on shapes or constants)?"""
        t = type(node)
        if t is ast.Name:
            return node.id in g.tensors
        if t is ast.Constant:
            return False
        if t is ast.Attribute:
            if node.attr in SHAPE_ATTRS:
                return False
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                cls = g.cls.name if g.cls is not None else None
                return bool(cls and node.attr in self.cell_params.get(cls, ()))
            return self.is_tensor(node.value, g)
        if t is ast.Call:
            return self._call_is_tensor(node, g)
        if t is ast.BinOp:
            return self.is_tensor(node.left, g) or self.is_tensor(node.right, g)
        if t is ast.UnaryOp:
            return self.is_tensor(node.operand, g)
        if t is ast.BoolOp:
            return any(self.is_tensor(v, g) for v in node.values)
        if t is ast.Compare:
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                return False
            return self.is_tensor(node.left, g) or any(self.is_tensor(c, g) for c in node.comparators)
        if t is ast.Subscript:
            return self.is_tensor(node.value, g) or self.is_tensor(node.slice, g)
        if t is ast.IfExp:
            return self.is_tensor(node.body, g) or self.is_tensor(node.orelse, g)
        if t in (ast.Tuple, ast.List, ast.Set):
            return any(self.is_tensor(e, g) for e in node.elts)
        if t is ast.Starred:
            return self.is_tensor(node.value, g)
        if t is ast.JoinedStr:
            return any(self.is_tensor(v.value, g) for v in node.values if isinstance(v, ast.FormattedValue))
        if t in (ast.ListComp, ast.GeneratorExp, ast.SetComp):
            return self.is_tensor(node.elt, g) or any(self.is_tensor(c.iter, g) for c in node.generators)
        if t is ast.Slice:
            return any(self.is_tensor(p, g) for p in (node.lower, node.upper, node.step) if p is not None)
        return False

    def _call_is_tensor(self, node: ast.Call, g: GraphFunction) -> bool:
        f = node.func
        if isinstance(f, ast.Call) and (dotted(f.func) or "").rsplit(".", 1)[-1] in CONST_OPS:
            return False  # P.Shape()(x)
        args_tensor = any(self.is_tensor(a, g) for a in node.args) or \
            any(self.is_tensor(k.value, g) for k in node.keywords)
        if isinstance(f, ast.Name):
            if f.id in CONST_BUILTINS or f.id in self.const_callables:
                return False
            if f.id in self.functions and self.compile_time(self.functions[f.id]):
                return False
            if f.id in self.functions or f.id in self._grad_targets:
                return args_tensor or f.id in self._grad_targets
        if isinstance(f, ast.Attribute):
            if f.attr in CONST_METHODS or f.attr in SHAPE_ATTRS:
                return False
            recv = f.value
            if isinstance(recv, ast.Name) and recv.id == "self":
                cls = g.cls.name if g.cls is not None else None
                if cls and f.attr in self.class_methods(cls):
                    method = self.class_methods(cls)[f.attr]
                    return False if self.compile_time(method) else args_tensor
                if cls and self.attr_kinds.get(cls, {}).get(f.attr) in CONST_OPS:
                    return False
                return True  # a sub-Cell or operator held by the Cell
            q = self.qualname(f) or ""
            if q.rsplit(".", 1)[-1] in CONST_OPS and q.startswith("mindspore"):
                return False
            if q.startswith(("mindspore.ops", "mindspore.mint", "mindspore.numpy", "mindspore.nn.functional")):
                return True
            if q.startswith("mindspore.") and q.rsplit(".", 1)[-1] in ("Tensor", "tensor"):
                return args_tensor
            if self.is_tensor(recv, g):
                return True
        q = self.qualname(f) or ""
        if q.startswith("mindspore") and q.rsplit(".", 1)[-1] in CONST_OPS:
            return False
        if q.startswith(("mindspore.ops", "mindspore.mint")):
            return True
        return args_tensor

    def is_tensor_derived(self, node: ast.AST, g: GraphFunction) -> bool:
        """Tensor-valued through an op, a Tensor method or a value computed from one, not only
        through a bare parameter (whose type is a guess: it may be a Python number)."""
        if not self.is_tensor(node, g):
            return False
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in g.tensors and n.id not in g.tensor_params:
                return True
            if isinstance(n, (ast.Call, ast.Subscript)) and self.is_tensor(n, g):
                return True
            if isinstance(n, ast.Attribute) and n.attr not in SHAPE_ATTRS and self.is_tensor(n, g):
                return True
        return False

    def in_graph(self, node: ast.AST) -> bool:
        return id(node) in self.graph_nodes
