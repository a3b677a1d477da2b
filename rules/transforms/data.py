"""torch.utils.data and torchvision -> mindspore.dataset.

A torch `Dataset` (map-style object) becomes a plain class that `ds.GeneratorDataset` reads
through `__getitem__`/`__len__`; `TensorDataset` a list of numpy rows (random access, `len`);
`DataLoader(...)` builds the pipeline `ds.GeneratorDataset(src, column_names, shuffle=False)
.batch(bs, drop_remainder=...)`, which iterates like a loader and yields MindSpore Tensors.
torchvision datasets become MindSpore readers (already pipelines: the loader only adds
shuffle/batch). A pipeline node can feed one loader only (MindSpore: "not a tree").
A named loader keeps its source as `loader.dataset` (torch's attribute) where the file reads it;
`DataLoader(ds, **kw)` reads its arguments from the dict (`kw.get('batch_size', 1)`).
"""
from __future__ import annotations

import builtins
import re

import libcst as cst

from msmigrate.engine import Unconvertible, kwarg, literal_value
from msmigrate.names import dotted, is_source, params_of, resolve, walk
from msmigrate.rules.generated import data as generated_data
from msmigrate.rules.generated import vision as generated_vision
from msmigrate.rules.transforms.common import generated

_PIPELINE_ROOT = "mindspore.dataset"


# ---- Dataset subclasses ----------------------------------------------------------------

def dataset_subclass(cls: cst.ClassDef, site) -> cst.ClassDef:
    """GeneratorDataset calls `__getitem__` with a numpy.int64 index, which MindSpore Tensor
    indexing rejects (torch's sampler passes a Python int): convert it first."""
    body = []
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__getitem__":
            params = stmt.params.params
            if len(params) >= 2:
                index = params[1].name.value
                if isinstance(stmt.body, cst.SimpleStatementSuite):   # `def __getitem__(self, i): return i`
                    stmt = stmt.with_changes(body=cst.IndentedBlock(body=[
                        cst.SimpleStatementLine([s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
                        for s in stmt.body.body]))
                inner = list(stmt.body.body)
                at = 1 if inner and _is_docstring(inner[0]) else 0
                fix = site.stmt(f"{index} = int({index})  # GeneratorDataset passes numpy.int64\n")
                if not (len(inner) > at and inner[at].deep_equals(fix)):
                    inner.insert(at, fix)
                stmt = stmt.with_changes(body=stmt.body.with_changes(body=inner))
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value in ("__getitem__", "__iter__"):
            stmt = stmt.visit(_UnwrapEagerTransforms(site))
        body.append(stmt)
    return cls.with_changes(body=cls.body.with_changes(body=body))


def sampler_subclass(cls: cst.ClassDef, site) -> cst.ClassDef:
    """A sampler of the program: GeneratorDataset(sampler=...) iterates it as torch's loader
    does (any iterable of indices); only its torch base goes."""
    return cls


class _UnwrapEagerTransforms(cst.CSTTransformer):
    """`img = self.transform(img)` in a sample method: MindSpore's Compose called on a PIL image
    returns a 1-tuple (torchvision's: the tensor), which GeneratorDataset batches one dimension
    deeper (5-D image batches). The value is unwrapped right after; a transform attribute called
    in any other form is marked."""

    def __init__(self, site):
        super().__init__()
        self.site = site

    @staticmethod
    def _transform_call(node) -> bool:
        return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            dotted(node.func.value) == "self" and "transform" in node.func.attr.value.lower()

    def _fix(self, name: str) -> cst.BaseStatement:
        return self.site.stmt(f"{name} = {name}[0] if isinstance({name}, tuple) and len({name}) == 1 else {name}"
                              f"  # MindSpore's Compose returns a 1-tuple for a PIL image\n")

    def _assigned(self, stmt) -> str | None:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                    isinstance(small.targets[0].target, cst.Name) and self._transform_call(small.value):
                return small.targets[0].target.value
        return None

    def leave_IndentedBlock(self, original, updated):
        body = []
        stmts = list(updated.body)
        for k, stmt in enumerate(stmts):
            body.append(stmt)
            name = self._assigned(stmt)
            if name is not None:
                fix = self._fix(name)
                if not (k + 1 < len(stmts) and stmts[k + 1].deep_equals(fix)):
                    body.append(fix)
            elif isinstance(stmt, cst.SimpleStatementLine):
                calls = []

                class Calls(cst.CSTVisitor):
                    def visit_Call(self_, node):
                        if _UnwrapEagerTransforms._transform_call(node):
                            calls.append(node)

                stmt.visit(Calls())
                calls = [c for c in calls if "target" not in c.func.attr.value.lower()]  # labels: no PIL
                if calls:
                    self.site.flag("review", f"{self.site.code(calls[0])} in a sample method: MindSpore's "
                                             f"Compose returns a 1-tuple for a PIL image; assign it to a name "
                                             f"and take [0] of a 1-tuple")
        return updated.with_changes(body=body)


def _is_docstring(stmt) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def tensor_dataset(site):
    """TensorDataset(X, Y) -> list(zip(np.asarray(X), np.asarray(Y))): random access and len()
    like torch's, rows of numpy arrays that GeneratorDataset batches like default_collate."""
    tensors = [a for a in site.node.args]
    if not tensors or any(a.star or a.keyword is not None for a in tensors):
        raise Unconvertible("TensorDataset(*tensors) with unpacked arguments", "manual")
    name = site.assigned_name
    if name is not None and re.search(rf"(?<![\w.]){re.escape(name)}\.tensors\b", site.rw.module_code):
        site.flag("manual", f"{site.qualname}: {name} becomes a list of rows, without torch's .tensors: "
                            f"keep the tensors under their own names and read those", stop=True)
    asarray = site.ref("numpy.asarray")
    rows = [cst.Arg(cst.Call(func=asarray, args=[cst.Arg(a.value)])) for a in tensors]
    return site.expr("list({zip})", zip=cst.Call(func=cst.Name("zip"), args=rows))


# ---- views of a map-style source: Subset, random_split ------------------------------------

_VIEWS = ("torch.utils.data.Subset", "torch.utils.data.dataset.Subset", "torch.utils.data.random_split")


def _source_pipeline(site, src, sampler) -> cst.BaseExpression:
    """GeneratorDataset reading `src` (a map-style source) at the sampler's indices: a pipeline
    with len() and the samples of torch's view, in its order."""
    kind, ncols = _source_kind(site, src)
    if kind == "pipeline":
        raise Unconvertible("a view of a MindSpore reader: pass sampler=ds.SubsetSampler(indices) to the reader",
                            "manual")
    if isinstance(ncols, tuple):   # dict samples of visible keys: rows of their values, columns named after them
        return cst.Call(func=site.ref("mindspore.dataset.GeneratorDataset"), args=_commas([
            cst.Arg(cst.Call(generated(site, generated_data.msmigrate_DictRows),
                             [cst.Arg(src), cst.Arg(cst.parse_expression(repr(list(ncols))))])),
            kwarg("column_names", cst.parse_expression(repr(list(ncols)))), kwarg("sampler", sampler)]))
    if ncols == "dict":
        raise Unconvertible("a view of a Dataset whose __getitem__ returns a dict of keys not visible: "
                            "return a dict literal (or a tuple of values)", "manual")
    if not isinstance(ncols, int):
        site.flag("review", f"{site.qualname}: the number of values a sample has is not visible; assumed 2 "
                            f"(column_names=['data', 'label'])")
        ncols = 2
    return cst.Call(func=site.ref("mindspore.dataset.GeneratorDataset"), args=_commas([
        cst.Arg(src), kwarg("column_names", _column_names(ncols)), kwarg("sampler", sampler)]))


def _view_reads(site, names) -> None:
    for name in names:
        if re.search(rf"(?<![\w.]){re.escape(name)}(\.(dataset|indices)\b|\[)", site.rw.module_code):
            site.flag("manual", f"{site.qualname}: {name} becomes a MindSpore pipeline: it has no .dataset / "
                                f".indices and is not indexable; iterate it or keep the indices under a name",
                      stop=True)


def subset(site):
    """Subset(src, indices) -> GeneratorDataset(src, sampler=ds.SubsetSampler(indices))."""
    src, indices = site.arg("dataset"), site.arg("indices")
    if src is None or indices is None:
        raise Unconvertible("Subset without its dataset and indices", "manual")
    sampler = site.expr("{S}(list({i}))", S=site.ref("mindspore.dataset.SubsetSampler"), i=indices)
    stmt = site.statement
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and \
            (site.rw.scopes.resolve(small.value.func) or "").endswith("Subset"):
        _view_reads(site, [site.assigned_name])   # the name is the view's (not a dict's holding it)
    return _source_pipeline(site, src, sampler)


def random_split(site):
    """random_split(src, [n1, n2, ...]) -> one pipeline per part, over a numpy permutation of the
    indices (torch draws another one: the parts hold other samples, in the same sizes); lengths
    that are not literal counts (fractions, computed counts) go through msmigrate_split_counts."""
    src, lengths = site.arg("dataset"), site.arg("lengths")
    if src is None or lengths is None:
        raise Unconvertible("random_split without its dataset and lengths", "manual")
    try:
        counts = literal_value(lengths)
    except ValueError:
        counts = None
    if not (isinstance(counts, (list, tuple)) and all(isinstance(c, int) for c in counts)):
        # fractions, or counts computed at run time: torch's rule decides then
        lengths = site.expr("{f}(len({s}), {l})", f=generated(site, generated_data.msmigrate_split_counts),
                            s=src, l=lengths)
    site.flag("review", f"{site.qualname}: the parts hold other samples than torch's split (numpy's permutation"
                        f"{', not the generator' if site.has('generator') else ''}), in the same sizes")
    stmt = site.statement
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Tuple):
        _view_reads(site, [dotted(e.value) for e in small.targets[0].target.elements if dotted(e.value)])
    sampler = site.expr("{S}(part.tolist())", S=site.ref("mindspore.dataset.SubsetSampler"))
    parts = site.expr("{split}({perm}(len({s})), {cumsum}({l})[:-1])", split=site.ref("numpy.split"),
                      perm=site.ref("numpy.random.permutation"), s=src, cumsum=site.ref("numpy.cumsum"),
                      l=lengths)
    return site.expr("[{p} for part in {parts}]", p=_source_pipeline(site, src, sampler), parts=parts)


# ---- what a loader reads ---------------------------------------------------------------

def _find_assigned(module: cst.Module, name: str) -> cst.BaseExpression | None:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node):
            for t in node.targets:
                if dotted(t.target) == name:
                    found.append(node.value)
                elif isinstance(t.target, (cst.Tuple, cst.List)) and isinstance(node.value, (cst.Tuple, cst.List)) \
                        and len(t.target.elements) == len(node.value.elements):   # `a, b = A(...), B(...)`
                    found.extend(v.value for e, v in zip(t.target.elements, node.value.elements)
                                 if dotted(e.value) == name)

    module.visit(Finder())
    return found[-1] if len(found) == 1 else None


def _unpacked_from_view(site, name: str) -> bool:
    """`name` is a part of `a, b = random_split(...)` (a pipeline once converted)."""
    return bool(_views_of(site, name))


def _views_of(site, name: str) -> list[cst.Call]:
    """The `random_split(...)` calls `name` is a part of (`a, b = random_split(...)`)."""
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node):
            if len(node.targets) == 1 and isinstance(node.targets[0].target, (cst.Tuple, cst.List)) and \
                    isinstance(node.value, cst.Call) and site.rw.scopes.resolve(node.value.func) in _VIEWS and \
                    any(dotted(e.value) == name for e in node.targets[0].target.elements):
                found.append(node.value)

    site.rw.module.visit(Finder())
    return found


def _find_class(module: cst.Module, name: str) -> cst.ClassDef | None:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_ClassDef(self, node):
            if node.name.value == name:
                found.append(node)

    module.visit(Finder())
    return found[0] if len(found) == 1 else None


def _own_values(fn: cst.FunctionDef, kind=cst.Return) -> list:
    """The values of `fn`'s own `return` (or `yield`) statements, not of functions nested in it."""
    values = []

    class Own(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            return node is fn

        def visit_Lambda(self, node):
            return False

        def on_visit(self, node):
            if isinstance(node, kind):
                values.append(node.value)
            return super().on_visit(node)

    fn.visit(Own())
    return values


def _sample_values(cls: cst.ClassDef, passed=None) -> list | None:
    """What `__getitem__` returns (or, for an iterable dataset, what `__iter__` yields).
    `passed(param)`: the value the instantiation passes for a constructor parameter, if known."""
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value in ("__getitem__", "__iter__"):
            sample = cst.Return if stmt.name.value == "__getitem__" else cst.Yield
            return [_stored_row(cls, value, passed) for value in _own_values(stmt, sample) if value is not None]
    return None


def _stored_row(cls: cst.ClassDef, value, passed=None):
    """`self.rows[i]` of rows the class stores as tuples (`self.rows = [(x, y) for ...]`, a list
    of tuple literals, `list(zip(a, b))`, or such a list the instantiation passes in:
    `PairDataset(pairs)` storing `self.rows = rows`): a row of theirs, a tuple of that many
    values; `value` itself otherwise."""
    if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute)
            and dotted(value.value.value) == "self"):
        return value
    attr = value.value.attr.value
    stored = [n.value for n in walk(cls) if isinstance(n, cst.Assign) and len(n.targets) == 1
              and isinstance(n.targets[0].target, cst.Attribute) and dotted(n.targets[0].target) == f"self.{attr}"]
    filled = [v for v in stored if not (isinstance(v, cst.List) and not v.elements)]
    if not filled:   # `self.samples = []`, then `self.samples.append((x, label))`
        return _appended_row(cls, f"self.{attr}") or value
    if len(filled) == 1 and isinstance(filled[0], cst.Name):   # a local list, appended to, then stored
        given = passed(filled[0].value) if passed is not None else None
        return _appended_row(cls, filled[0].value) or (given is not None and _row_of(given)) or value
    if len(stored) != 1:
        return value
    return _row_of(stored[0]) or value


def _row_of(made):
    """A row of the list `made` makes, where it is visibly made of tuples of one length (a
    comprehension of tuples, a list of tuple literals, `list(zip(a, b))`), as a tuple; else None."""
    if isinstance(made, cst.ListComp) and isinstance(made.elt, cst.Tuple):
        return made.elt
    if isinstance(made, cst.List) and made.elements and isinstance(made.elements[0].value, cst.Tuple):
        return made.elements[0].value
    if isinstance(made, cst.Call) and dotted(made.func) == "list" and len(made.args) == 1 and \
            isinstance(made.args[0].value, cst.Call) and dotted(made.args[0].value.func) == "zip" and \
            not any(a.star for a in made.args[0].value.args):
        return cst.Tuple([cst.Element(a.value) for a in made.args[0].value.args])
    return None


def _passed_values(site, cls: cst.ClassDef, call: cst.Call):
    """param -> the value `call` (an instantiation of `cls`) passes for that constructor
    parameter, a name followed to its one module-level assignment; a function of the param."""
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None or any(a.star for a in call.args):
        return None
    params = params_of(init.params)[1:]

    def passed(param: str):
        arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == param), None)
        if arg is None and param in params:
            positional = [a for a in call.args if a.keyword is None]
            index = params.index(param)
            arg = positional[index] if index < len(positional) else None
        if arg is None:
            return None
        name = dotted(arg.value)
        return _find_assigned(site.rw.module, name) if name is not None else arg.value

    return passed


def _appended_row(cls: cst.ClassDef, name: str):
    """The tuple literal every `name.append(...)` in the class appends (all of one length), else None."""
    rows = [n.args[0].value for n in walk(cls) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
            and n.func.attr.value == "append" and dotted(n.func.value) == name and len(n.args) == 1]
    if rows and all(isinstance(r, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in r.elements)
                    and len(r.elements) == len(rows[0].elements) for r in rows):
        return rows[0]
    return None


def _getitem_columns(cls: cst.ClassDef, passed=None) -> int | str | None:
    """The number of values a sample has; every one must agree. 'dict' / the keys for dicts.
    GeneratorDataset reads a list like a tuple (one column an element)."""
    returns = _sample_values(cls, passed)
    if not returns:
        return None
    sizes = set()
    for value in returns:
        if isinstance(value, (cst.Tuple, cst.List)) and \
                not any(isinstance(e, cst.StarredElement) for e in value.elements):
            sizes.add(len(value.elements))
        elif isinstance(value, cst.Dict):
            keys = tuple(_string(e.key) for e in value.elements if isinstance(e, cst.DictElement))
            sizes.add(keys if keys and all(keys) and len(keys) == len(value.elements) else "dict")
        else:
            sizes.add(1)
    return sizes.pop() if len(sizes) == 1 else None


def _bare_samples(site, src, seen: frozenset = frozenset()) -> bool:
    """`src` is an instance of the program's own Dataset class whose samples are one value (not a
    tuple, list or dict literal), or a Subset / random_split part of one: torch's collate then
    batches them into one tensor, which the loader yields itself, where a MindSpore pipeline
    yields a row of one column."""
    name = dotted(src)
    if name in seen:
        return False
    value = _find_assigned(site.rw.module, name) if name is not None else src
    if value is None and name is not None:
        views = _views_of(site, name)
        value = views[0] if len(views) == 1 else None
    if not isinstance(value, cst.Call):
        return False
    # a view (Subset(src, ...), already converted inline: GeneratorDataset(src, ..., sampler=...))
    if site.rw.scopes.resolve(value.func) in _VIEWS or \
            site.code(value.func) == site.code(site.ref("mindspore.dataset.GeneratorDataset")):
        return bool(value.args) and _bare_samples(site, value.args[0].value, seen | {name})
    if dotted(value.func) not in site.rw.local_classes:
        return False
    cls = _find_class(site.rw.module, dotted(value.func)) or site.rw.project_class(dotted(value.func))
    returns = _sample_values(cls, _passed_values(site, cls, value)) if cls is not None else None
    return bool(returns) and not any(isinstance(v, (cst.Tuple, cst.List, cst.Dict, cst.ListComp, cst.DictComp))
                                     for v in returns)


def _string(node) -> str | None:
    try:
        value = literal_value(node)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _source_kind(site, src: cst.BaseExpression, depth: int = 0):
    """('pipeline', None) for MindSpore readers, ('map', ncols | 'dict' | None) otherwise."""
    src = _without_fields(src)
    prefix = site.code(site.ref(_PIPELINE_ROOT)) + "."
    if site.code(src).startswith(prefix):
        return "pipeline", 2
    name = dotted(src)
    rec = site.instance_record(src) if name else None
    if rec is not None and _is_reader(rec):
        return "pipeline", 2
    value = src
    if name is not None:
        value = _find_assigned(site.rw.module, name)
        if value is None:
            return ("pipeline", _view_columns(site, name, depth)) if _unpacked_from_view(site, name) \
                else ("map", None)
    if not isinstance(value, cst.Call):
        return "map", None
    # an inline TensorDataset, already rewritten: list(zip(np.asarray(X), ...))
    if (isinstance(value.func, cst.Name) and value.func.value == "list" and len(value.args) == 1
            and isinstance(value.args[0].value, cst.Call) and dotted(value.args[0].value.func) == "zip"):
        return "map", len(value.args[0].value.args)
    q = site.rw.scopes.resolve(value.func)
    if q in _VIEWS:
        return "pipeline", _view_columns(site, value, depth)
    if q == "torch.utils.data.TensorDataset":
        if any(a.star or a.keyword is not None for a in value.args):
            return "map", None
        return "map", len(value.args)
    if q is not None and _is_reader(site.rw.table.lookup(q)):
        return "pipeline", 2
    cls_name = dotted(value.func)
    if cls_name in site.rw.local_classes:
        cls = _find_class(site.rw.module, cls_name) or site.rw.project_class(cls_name)
        if cls is not None:
            return "map", _getitem_columns(cls, _passed_values(site, cls, value))
    fn = _find_function(site.rw.module, cls_name) if isinstance(value.func, cst.Name) else None
    if fn is not None and not depth:
        # `DataLoader(get_dataset())`: what every return of the file's function makes
        kinds = {_source_kind(site, v, depth + 1) if v is not None else ("map", None) for v in _own_values(fn)}
        if len(kinds) == 1:
            return kinds.pop()
    return "map", None


def _without_fields(src):
    """The converted reader inside `msmigrate_dataset_fields(reader, ...)` (the fields the file
    reads through its loader); `src` itself otherwise."""
    if isinstance(src, cst.Call) and dotted(src.func) == "msmigrate_dataset_fields" and src.args:
        return src.args[0].value
    return src


def _view_columns(site, view, depth: int):
    """A Subset / random_split part's columns: the keys of its source's dict samples (its
    pipeline's column names, batches read back as dicts), 2 otherwise (its assumed columns)."""
    if isinstance(view, str):
        views = _views_of(site, view)
        view = views[0] if len(views) == 1 else None
    if not isinstance(view, cst.Call) or not view.args or depth > 2:
        return 2
    _, ncols = _source_kind(site, view.args[0].value, depth + 1)
    return ncols if isinstance(ncols, tuple) else 2


def _is_reader(rec) -> bool:
    """A torchvision dataset this table converts to a MindSpore reader (one it leaves as torch is
    still a map-style object: GeneratorDataset reads it, it has no .shuffle()/.batch())."""
    return rec is not None and rec.torch.startswith("torchvision.datasets.") and \
        rec.transform in ("data.vision_reader", "data.image_folder")


def _column_names(n: int) -> cst.BaseExpression:
    names = ["data", "label"] if n == 2 else [f"column_{i}" for i in range(n)]
    return cst.parse_expression(repr(names))


_LOADER_DROPPED = ("num_workers", "pin_memory", "timeout", "multiprocessing_context", "prefetch_factor",
                   "persistent_workers", "pin_memory_device", "in_order")


def data_loader(site):
    """DataLoader(ds, batch_size, shuffle, drop_last, ...) -> a batched mindspore.dataset
    pipeline with torch's order (MindSpore shuffles by default: shuffle=False is pinned)."""
    src = site.arg("dataset")
    if src is None:
        raise Unconvertible("DataLoader without a dataset argument", "manual")
    _bind_unpacked_kwargs(site)
    if site.has("batch_sampler"):
        _unpack_batch_sampler(site)
    collate = site.arg("collate_fn")
    if collate is not None and site.code(collate) == "None":
        collate = None
    for name in ("worker_init_fn", "generator"):
        if site.has(name) and site.code(site.arg(name)) != "None":
            why = {"worker_init_fn": "MindSpore workers are not configured per worker",
                   "generator": "seed the pipeline with ds.config.set_seed(...)"}[name]
            site.flag("MSC105", f"{site.qualname}: {name}={site.code(site.arg(name))} has no MindSpore "
                                f"equivalent; argument dropped: {why}")
    shuffle = site.arg("shuffle", cst.Name("False"))
    if isinstance(shuffle, cst.Name) and shuffle.value == "None":
        shuffle = cst.Name("False")
    sampler = site.arg("sampler")
    if sampler is not None and site.code(sampler) == "None":
        sampler = None
    kind, ncols = _source_kind(site, src)
    names = None   # a GeneratorDataset's column names (dict samples)
    dict_rows = isinstance(ncols, tuple) and collate is None   # dict samples of visible keys
    if kind == "pipeline":
        pipeline = src
        name = dotted(src)
        if name is not None and _loaders_of(site, name) > 1:
            site.flag("manual", f"{site.qualname}: {name} feeds several loaders; a MindSpore pipeline "
                                f"node can feed only one (\"not a tree\"): create the reader once per loader")
        if sampler is not None:
            raise Unconvertible("a sampler on a MindSpore reader: pass sampler= to the reader", "manual")
        try:
            shuffled = literal_value(shuffle)
        except ValueError:
            shuffled = None
        if shuffled is not False and dotted(src) is None:
            pipeline = _shuffle_reader(site, src, shuffle) or cst.Call(
                generated(site, generated_data.msmigrate_shuffled),
                [cst.Arg(src)] + ([] if shuffled else [cst.Arg(shuffle)]))
        elif shuffled is not False:
            pipeline = site.expr("{s}.shuffle({s}.get_dataset_size())", s=src)
            if shuffled is None:  # shuffle(buffer_size) rejects sizes below 2: no no-op form
                pipeline = site.expr("({p} if {c} else {s})", p=pipeline, c=shuffle, s=src)
    else:
        if dict_rows:
            # rows of their values in the keys' order, batches read back as dicts (`batch["users"]`)
            keys = cst.parse_expression(repr(list(ncols)))
            src_rows = cst.Call(generated(site, generated_data.msmigrate_DictRows), [cst.Arg(src), cst.Arg(keys)])
            names, ncols = list(ncols), len(ncols)
        if isinstance(ncols, tuple) or ncols == "dict":
            site.flag("manual", f"{site.qualname}: __getitem__ returns a dict: GeneratorDataset rows are "
                                f"tuples; return the values in column_names order and index batches by position")
            names, ncols = (list(ncols), len(ncols)) if isinstance(ncols, tuple) else (None, None)
        counted = ncols is None and names is None and collate is None
        if ncols is None and names is None and not counted:
            site.flag("review", f"{site.qualname}: the number of values a sample has is not visible; "
                                f"assumed 2 (column_names=['data', 'label'])")
            ncols = 2
        columns = None if counted else cst.parse_expression(repr(names)) if names else _column_names(ncols)
        args = [cst.Arg(src_rows if dict_rows else src)] + \
            ([] if counted else [kwarg("column_names", columns)])
        if sampler is not None:
            if not _converted_sampler(site, sampler):
                site.flag("review", f"{site.qualname}: sampler={site.code(sampler)}: MindSpore needs a "
                                    f"mindspore.dataset sampler (ds.RandomSampler, ds.DistributedSampler, ...)")
            args.append(kwarg("sampler", sampler))
            if isinstance(sampler, cst.Name):
                # `sampler = DistributedSampler(ds) if distributed else None`: with no sampler
                # GeneratorDataset shuffles unless told (and rejects shuffle= beside a sampler)
                args.append(kwarg("shuffle", site.expr("({s} if {n} is None else None)", s=shuffle, n=sampler)))
        else:
            args.append(kwarg("shuffle", shuffle))
        # samples of a source the code does not show (`DataLoader(dataset)` of a function's
        # parameter): their values are counted on the first one when the loader is made
        pipeline = cst.Call(func=generated(site, generated_data.msmigrate_GeneratorDataset) if counted
                            else site.ref("mindspore.dataset.GeneratorDataset"), args=args)
    _check_loader_uses(site, shuffle, src)
    batch_size = site.arg("batch_size", cst.Integer("1"))
    if isinstance(batch_size, cst.Name) and batch_size.value == "None":
        if collate is not None:
            site.flag("MSC105", f"{site.qualname}: collate_fn={site.code(collate)} on single samples "
                                f"(batch_size=None) has no MindSpore equivalent; argument dropped: apply it with .map")
        return _keep_source(site, src, _dict_batches(site, pipeline) if dict_rows
                            else _one_column(site, src, None, pipeline))
    batch_args = [cst.Arg(batch_size)]
    if site.has("drop_last"):
        batch_args.append(kwarg("drop_remainder", site.arg("drop_last")))
    if collate is not None:
        bare = _bare_samples(site, src)
        batch_args.extend(_per_batch_map(site, collate, 1 if bare else ncols if kind == "map" else 2, bare))
    batched = cst.Call(func=cst.Attribute(value=pipeline, attr=cst.Name("batch")), args=_commas(batch_args))
    if dict_rows:
        return _keep_source(site, src, _dict_batches(site, batched))
    return _keep_source(site, src, _one_column(site, src, collate, batched))


def _dict_batches(site, loader):
    """Batches of dict samples, read back as dicts of their keys, the pipeline's column names
    (torch's collate)."""
    return cst.Call(generated(site, generated_data.msmigrate_OneColumn, generated_data.msmigrate_DictBatches),
                    [cst.Arg(loader)])


def _one_column(site, src, collate, loader):
    """One value a batch: torch's loader yields it itself, a pipeline a row of one column; the
    generated wrapper yields the column. Without a collate_fn the samples decide (a 1-tuple / [x]
    sample stays a row: torch's collate then yields a one-element list too), with one what it
    returns."""
    if collate is None:
        if not _bare_samples(site, src):
            return loader
    else:
        fn = collate if isinstance(collate, cst.Lambda) else \
            _find_function(site.rw.module, dotted(collate)) if dotted(collate) else None
        if fn is None or not _returns_one_value(site, fn):
            return loader
    return cst.Call(func=generated(site, generated_data.msmigrate_OneColumn), args=[cst.Arg(loader)])


# DataLoader's own defaults, for the keys a `**kwargs` dict may hold
_LOADER_DEFAULTS = {"batch_size": "1", "shuffle": "False", "drop_last": "False", "sampler": "None",
                    "collate_fn": "None", "batch_sampler": "None", "worker_init_fn": "None",
                    "generator": "None"}
_ALWAYS_READ = ("batch_size", "shuffle", "drop_last")


def _bind_unpacked_kwargs(site) -> None:
    """DataLoader(ds, **kw): torch reads batch_size/shuffle/drop_last/... from the dict at run time.
    Each key the dict may hold (and batch_size/shuffle/drop_last always) becomes `key=kw.get('key',
    torch's default)`, so the values are the dict's whatever branch filled it. Keys not visible
    statically (a dict built elsewhere) are marked: only the three always-read ones are kept."""
    for arg in site.unbound:
        if arg.star != "**":
            continue
        keys = _dict_keys(site, arg.value)
        if keys is None:
            site.flag("review", f"{site.qualname}: the keys of **{site.code(arg.value)} are not visible: "
                                f"batch_size/shuffle/drop_last are read from it; a sampler/collate_fn "
                                f"in it is not applied")
            keys = set()
        for key in [*_ALWAYS_READ, *sorted(keys - set(_ALWAYS_READ))]:
            if key in site.bound or key not in _LOADER_DEFAULTS and key not in site.record.args:
                continue
            if key not in _LOADER_DEFAULTS:  # num_workers, pin_memory, ...: dropped anyway
                continue
            value = site.expr("{d}.get({k}, {v})", d=arg.value, k=cst.SimpleString(repr(key)),
                              v=cst.parse_expression(_LOADER_DEFAULTS[key]))
            site.bound[key] = cst.Arg(value=value, keyword=cst.Name(key))


def _dict_keys(site, expr, seen: frozenset = frozenset()) -> set[str] | None:
    """The string keys a dict expression may hold: a literal / dict(k=...) / `a if c else b`, or a
    name assigned those in the file, plus its `name.update(...)` and `name['k'] = ...`."""
    if isinstance(expr, cst.Dict):
        keys = set()
        for el in expr.elements:
            if not isinstance(el, cst.DictElement) or _string(el.key) is None:
                return None
            keys.add(_string(el.key))
        return keys
    if isinstance(expr, cst.IfExp):
        a, b = _dict_keys(site, expr.body, seen), _dict_keys(site, expr.orelse, seen)
        return None if a is None or b is None else a | b
    if isinstance(expr, cst.Call) and dotted(expr.func) == "dict":
        if any(a.keyword is None for a in expr.args):
            return None
        return {a.keyword.value for a in expr.args}
    name = dotted(expr)
    if name is None or name in seen:   # a.update(b); b.update(a): not resolved
        return None
    seen = seen | {name}
    values, updates, items, other = [], [], set(), []

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node):
            for t in node.targets:
                if dotted(t.target) == name:
                    values.append(node.value)
                elif isinstance(t.target, cst.Subscript) and dotted(t.target.value) == name:
                    key = _string(t.target.slice[0].slice.value) if len(t.target.slice) == 1 and \
                        isinstance(t.target.slice[0].slice, cst.Index) else None
                    (items.add(key) if key is not None else other.append(t))

        def visit_AugAssign(self, node):
            if dotted(node.target) == name:   # kw |= {...}
                updates.append(node.value)

        def visit_Call(self, node):
            if isinstance(node.func, cst.Attribute) and dotted(node.func.value) == name and \
                    node.func.attr.value in ("update", "setdefault", "pop"):
                if node.func.attr.value == "update":
                    if len(node.args) == 1 and node.args[0].keyword is None:
                        updates.append(node.args[0].value)
                    else:
                        items.update(a.keyword.value for a in node.args if a.keyword is not None)
                        other.extend(a for a in node.args if a.keyword is None)
                elif node.func.attr.value == "setdefault" and node.args and _string(node.args[0].value):
                    items.add(_string(node.args[0].value))

    site.rw.module.visit(Finder())
    if not values or other:
        return None
    keys = set(items)
    for value in [*values, *updates]:
        found = _dict_keys(site, value, seen) if dotted(value) != name else set()
        if found is None:
            return None
        keys |= found
    return keys


def _keep_source(site, src, loader):
    """torch's `loader.dataset` is the source (`len(test_loader.dataset)` averages a test loss): a
    MindSpore pipeline has none, so a named loader gets the attribute right after it is built; an
    inline source is bound to a name first so the attribute is the same object the loader reads.
    Only in files that read `.dataset`: MindSpore deep-copies a pipeline's attributes every time it
    is iterated (a reader source is a node of the tree and costs nothing; an in-memory list of
    MNIST's 60000 rows costs ~0.6 s an epoch)."""
    name = site.assigned_name
    if not re.search(r"\.dataset\b", site.rw.module_code):
        return loader
    stmt = site.statement
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    returned = isinstance(small, cst.Return) and name is None
    if returned:   # `return DataLoader(...)`: built under a name, then returned
        name = _free_name(site, "loader")
    if small is None or not isinstance(small.value, cst.Call) or \
            not (site.rw.scopes.resolve(small.value.func) or "").endswith("DataLoader"):
        return _with_dataset(site, src, loader)   # in a container, an argument, ...
    if dotted(src) is None:
        hoisted = cst.Name(_free_name(site, name.rsplit(".", 1)[-1] + "_dataset"))
        swapped = _replace_node(loader, src, hoisted)
        if swapped.deep_equals(loader):
            # the source was rebuilt (an inline reader given shuffle=True): the dataset is what
            # the loader batches, the same samples
            if not (isinstance(loader, cst.Call) and isinstance(loader.func, cst.Attribute)
                    and loader.func.attr.value == "batch"):
                _unkept(site, name)
                return loader
            src = loader.func.value
            swapped = loader.with_changes(func=loader.func.with_changes(value=hoisted))
        site.before(site.stmt("{n} = {s}\n", n=hoisted, s=src))
        loader, src = swapped, hoisted
    keep = site.stmt("{l}.dataset = {s}  # torch's DataLoader.dataset\n", l=cst.parse_expression(name), s=src)
    if returned:
        site.before(site.stmt("{l} = {p}\n", l=cst.Name(name), p=loader))
        site.before(keep)
        return cst.Name(name)
    site.after(keep)
    return loader


def _with_dataset(site, src, loader):
    """A loader made where no statement can set its `.dataset` (`{"train": DataLoader(...)}`,
    an argument): the generated msmigrate_with_dataset sets it. A source computed by a call is
    bound with `:=` where the loader reads it, so that both are one object, made once."""
    made = site.rw.original_call
    if site.statement is not None and any(isinstance(n, (cst.CompFor, cst.For)) and any(m is made for m in walk(n.iter))
                                          for n in walk(site.statement)):
        return loader   # iterated where it is made: nothing reads its .dataset (and `:=` is no comprehension's iterable)
    if dotted(src) is None:
        target = src
        if _replace_node(loader, src, cst.Name("_")).deep_equals(loader):
            # rebuilt (an inline reader given shuffle=True): what the loader batches
            if not (isinstance(loader, cst.Call) and isinstance(loader.func, cst.Attribute)
                    and loader.func.attr.value == "batch"):
                _unkept(site, None)
                return loader
            target = loader.func.value
        if any(isinstance(n, cst.Call) for n in walk(target)):
            name = cst.Name(site.fresh("loader_dataset"))
            bound = cst.NamedExpr(target=name, value=target, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            loader, src = _replace_node(loader, target, bound), name
        else:
            src = target
    return cst.Call(generated(site, generated_data.msmigrate_with_dataset), [cst.Arg(loader), cst.Arg(src)])


def _free_name(site, base: str) -> str:
    """`base`, or `base_2`, ...: a name the file does not use (the program's own variables stay theirs)."""
    name, n = base, 1
    while re.search(rf"\b{re.escape(name)}\b", site.rw.module_code):
        n += 1
        name = f"{base}_{n}"
    return name


def _unkept(site, name) -> None:
    """The file reads some `.dataset` and this loader could not keep its source."""
    if name is None or re.search(rf"(?<![\w.]){re.escape(name)}\.dataset\b", site.rw.module_code):
        site.flag("review", f"{site.qualname}: a MindSpore pipeline has no .dataset and this loader's "
                            f"source could not be kept on it (bind the loader to a name): "
                            f"{name or 'loader'}.dataset fails")


def _replace_node(tree, old, new):
    """`tree` with its first sub-expression equal to `old` replaced by `new`."""
    done = []

    class Swap(cst.CSTTransformer):
        def on_visit(self, node):
            if not done and node.deep_equals(old):
                done.append(node)
                return False
            return True

        def on_leave(self, original, updated):
            return new if done and original is done[0] else updated

    return tree.visit(Swap())


def batch_sampler(site):
    return site.call(generated(site, generated_data.msmigrate_BatchSampler))


def chain_dataset(site):
    """ChainDataset(datasets) -> the generated class (its sized variant after it, which it makes
    where every dataset has len()): the datasets' samples in turn."""
    generated(site, generated_data.msmigrate_ChainDataset, generated_data.msmigrate_SizedChainDataset)
    cls = generated(site, generated_data.msmigrate_ChainDataset)
    return site.call(cls) if site.is_call else cls


def stack_dataset(site):
    """StackDataset(*args, **kwargs) -> the generated class, given the call's own arguments
    (any number of datasets, by position or by keyword)."""
    cls = generated(site, generated_data.msmigrate_StackDataset)
    return site.node.with_changes(func=cls) if site.is_call else cls


def default_convert(site):
    """default_convert(data) -> the generated function; a bare reference (collate_fn=) is it."""
    func = generated(site, generated_data.msmigrate_default_convert)
    return site.call(func) if site.is_call else func


def _unpack_batch_sampler(site) -> None:
    """DataLoader(ds, batch_sampler=BatchSampler(s, n, drop_last)) -> the loader of
    DataLoader(ds, sampler=s, batch_size=n, drop_last=drop_last): the same batches."""
    value = site.arg("batch_sampler")
    fields = ("sampler", "batch_size", "drop_last")
    if isinstance(value, cst.Call) and dotted(value.func) == "msmigrate_BatchSampler":   # converted in place
        parts = dict(zip(fields, [a.value for a in value.args if a.keyword is None]))
        parts.update({a.keyword.value: a.value for a in value.args if a.keyword is not None})
    elif isinstance(value, cst.Name) and _assigned_from(site, value) in _BATCH_SAMPLERS:
        parts = {f: cst.Attribute(value=value, attr=cst.Name(f)) for f in fields}   # the generated class's
    else:
        raise Unconvertible("batch_sampler= other than a BatchSampler(sampler, batch_size, drop_last): "
                            "MindSpore batches with .batch(); give the loader a sampler and a batch size", "manual")
    del site.bound["batch_sampler"]
    for name, part in parts.items():
        site.bound[name] = kwarg(name, part)


_BATCH_SAMPLERS = ("torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler")


def _assigned_from(site, name: cst.Name) -> str | None:
    """What the callee of the source's one top-level `name = <call>` resolves to (None when
    there is not exactly one such assignment)."""
    found = [stmt.body[0].value for stmt in site.rw.module.body
             if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
             and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1
             and dotted(stmt.body[0].targets[0].target) == name.value]
    if len(found) != 1 or not isinstance(found[0], cst.Call):
        return None
    return site.rw.scopes.resolve(found[0].func)


# torch samplers the tables convert to mindspore.dataset samplers
_SAMPLERS = ("DistributedSampler", "RandomSampler", "SequentialSampler", "SubsetRandomSampler",
             "WeightedRandomSampler")


def _converted_sampler(site, sampler) -> bool:
    """sampler= is (a name assigned from) one of the samplers the tables convert, or an object
    of a sampler class of the program (GeneratorDataset iterates any iterable of indices)."""
    if isinstance(sampler, cst.Call):
        name = dotted(sampler.func) or ""
        return name.rsplit(".", 1)[-1] in _SAMPLERS or re.search(
            rf"(?m)^class\s+{re.escape(name)}\s*\([^)]*\bSampler\b", site.rw.module_code) is not None
    name = dotted(sampler)
    if name is None:
        return False
    classes = "|".join(_SAMPLERS)
    return re.search(rf"(?m)^\s*{re.escape(name)}\s*=[^\n]*\b({classes})\s*\(", site.rw.module_code) is not None


def _per_batch_map(site, collate, ncols, bare=False) -> list[cst.Arg]:
    """collate_fn=f: .batch(per_batch_map=...) gets one list per column and a BatchInfo, in the
    loader's order (reshuffled every epoch like torch's); f gets torch's list of samples
    back with zip (samples of one value: the column itself, not 1-tuples). When f returns a
    different number of values than a sample has, MindSpore needs the output column names."""
    site.flag("review", f"{site.qualname}: collate_fn gets each sample's arrays as Tensors and its numbers as "
                        f"Python numbers (a NumPy array the Dataset returns comes as a Tensor too) and must "
                        f"return one value per column")
    helper = generated(site, generated_data.msmigrate_pipeline_turns, generated_data.msmigrate_collated)
    args = [kwarg("per_batch_map", site.expr("{h}({f}%s)" % (", bare=True" if bare else ""), h=helper, f=collate))]
    fn = _find_function(site.rw.module, dotted(collate)) if dotted(collate) else None
    returned = _returns_count(fn) if fn is not None else None
    if returned is None and _returns_one_value(site, collate if isinstance(collate, cst.Lambda) else fn):
        returned = 1
    if returned is None and not isinstance(collate, cst.Lambda):
        site.flag("review", f"{site.qualname}: how many values collate_fn={site.code(collate)} returns is not "
                            f"visible: if not {ncols}, pass output_columns=[...] to .batch; if one value, the "
                            f"loader yields it in a one-element list (torch: the value itself)")
    elif isinstance(ncols, int) and returned is not None and returned != ncols:
        args.append(kwarg("output_columns", _column_names(returned)))
    return args


def _find_function(module: cst.Module, name: str) -> cst.FunctionDef | None:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            if node.name.value == name:
                found.append(node)

    module.visit(Finder())
    return found[0] if len(found) == 1 else None


def _returns_count(fn: cst.FunctionDef) -> int | None:
    """How many values every `return` of `fn` gives (a tuple literal's length, else 1)."""
    sizes = set()

    class Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            return node is fn

        def visit_Lambda(self, node):
            return False

        def visit_Return(self, node):
            value = node.value
            if isinstance(value, cst.Tuple):
                starred = any(isinstance(e, cst.StarredElement) for e in value.elements)
                sizes.add(None if starred else len(value.elements))
            elif value is not None:
                sizes.add(None if isinstance(value, (cst.Name, cst.Call, cst.Dict)) else 1)

    fn.visit(Returns())
    return sizes.pop() if len(sizes) == 1 else None


# calls whose value is one array: a collate_fn returning one is yielded by torch's loader as is
_ONE_VALUE_CALLS = frozenset({
    "torch.stack", "torch.cat", "torch.concat", "torch.concatenate", "torch.vstack", "torch.hstack",
    "torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.FloatTensor", "torch.LongTensor",
    "torch.Tensor", "torch.nn.utils.rnn.pad_sequence", "numpy.stack", "numpy.array", "numpy.asarray",
    "numpy.concatenate", "numpy.vstack"})


def _returns_one_value(site, fn: cst.FunctionDef | cst.Lambda | None) -> bool:
    """Every `return` of `fn` (a lambda: its body) is a call that makes one array (torch.stack(...), ...)."""
    if fn is None:
        return False
    values = [fn.body] if isinstance(fn, cst.Lambda) else _own_values(fn)

    def one(value) -> bool:
        if isinstance(value, cst.BinaryOperation):   # torch.stack(batch) * 2
            return one(value.left) or one(value.right)
        if not isinstance(value, cst.Call):
            return False
        if site.rw.scopes.resolve(value.func) in _ONE_VALUE_CALLS:
            return True
        # a lambda is an argument, converted already: ops.stack(...), ms.tensor(...), np.stack(...)
        name = (dotted(value.func) or "").split(".")
        return isinstance(fn, cst.Lambda) and len(name) == 2 and name[0] in ("ops", "ms", "np") and \
            name[1] in {q.rsplit(".", 1)[-1] for q in _ONE_VALUE_CALLS}

    return bool(values) and all(one(v) for v in values)


def _check_loader_uses(site, shuffle, src) -> None:
    """Loader behaviour that differs and that only the rest of the file shows."""
    code = site.rw.module_code
    try:
        shuffled = literal_value(shuffle)
    except ValueError:
        shuffled = None
    if shuffled is not False and re.search(r"\bmanual_seed(_all)?\s*\(", code) and \
            not _iterated_once(site.rw.module, site.assigned_name):
        site.flag("review", f"{site.qualname}: with a global seed every `for ... in loader` pass rebuilds the "
                            f"pipeline with the same seed: each epoch sees the same order (torch reshuffles); "
                            f"iterate one loader.create_tuple_iterator(num_epochs=EPOCHS) across the epochs")


def _iterated_once(module: cst.Module, name: str | None) -> bool:
    """Whether the loader bound to `name` is gone over in one pass only: one `for` statement
    reads it (`for x, y in loader`, `enumerate(loader)`), at the top level and in no loop, and
    nothing else but attribute reads (`loader.dataset`) uses it."""
    if name is None:
        return False
    fors, others = [], 0

    class Uses(cst.CSTVisitor):
        def __init__(self):
            self.depth = 0   # loops and functions around

        def _enter(self, node) -> None:
            self.depth += 1

        def _leave(self, node) -> None:
            self.depth -= 1

        visit_While = visit_FunctionDef = _enter
        leave_While = leave_FunctionDef = _leave

        def visit_For(self, node: cst.For) -> None:
            if any(isinstance(n, cst.Name) and n.value == name for n in walk(node.iter)):
                fors.append(self.depth)
            self.depth += 1

        def leave_For(self, node) -> None:
            self.depth -= 1

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            return not (isinstance(node.value, cst.Name) and node.value.value == name)

        def visit_Name(self, node: cst.Name) -> None:
            nonlocal others
            others += node.value == name

    module.visit(Uses())
    # the assignment and the one for statement's reading are the name's only other uses
    return fors == [0] and others == 2


def _loaders_of(site, name: str) -> int:
    """How many DataLoader calls in the file read `name`."""
    count = 0
    scopes = site.rw.scopes

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node):
            nonlocal count
            if node.args and dotted(node.args[0].value) == name and \
                    (scopes.resolve(node.func) or "").endswith(".DataLoader"):
                count += 1

    site.rw.module.visit(Finder())
    return count


def _shuffle_reader(site, src, shuffle):
    """An inline reader (`ds.MnistDataset(..., shuffle=False).map(...)`): its own shuffle=."""
    if _without_fields(src) is not src:
        inner = _shuffle_reader(site, src.args[0].value, shuffle)
        return None if inner is None else src.with_changes(args=[src.args[0].with_changes(value=inner),
                                                                 *src.args[1:]])
    if isinstance(src, cst.Call) and isinstance(src.func, cst.Attribute) and \
            isinstance(src.func.value, cst.Call):
        inner = _shuffle_reader(site, src.func.value, shuffle)
        return None if inner is None else src.with_changes(func=src.func.with_changes(value=inner))
    if isinstance(src, cst.Call):
        args = [kwarg("shuffle", shuffle, a) if a.keyword is not None and a.keyword.value == "shuffle" else a
                for a in src.args]
        if args != list(src.args):
            return src.with_changes(args=args)
    return None


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [a.with_changes(comma=comma) for a in args[:-1]] + args[-1:]


# ---- torchvision datasets ---------------------------------------------------------------

# torch name -> (MindSpore reader, sub-directory of torchvision's root it reads, label column)
_READERS = {
    "torchvision.datasets.MNIST": ("mindspore.dataset.MnistDataset", ("MNIST", "raw"), "label"),
    "torchvision.datasets.FashionMNIST": ("mindspore.dataset.FashionMnistDataset", ("FashionMNIST", "raw"), "label"),
    "torchvision.datasets.KMNIST": ("mindspore.dataset.KMnistDataset", ("KMNIST", "raw"), "label"),
    "torchvision.datasets.CIFAR10": ("mindspore.dataset.Cifar10Dataset", ("cifar-10-batches-bin",), "label"),
    "torchvision.datasets.CIFAR100": ("mindspore.dataset.Cifar100Dataset", ("cifar-100-binary",), "fine_label"),
}


def _map(site, pipeline, op, column: str):
    return site.expr("{p}.map(operations={op}, input_columns={c})", p=pipeline, op=op,
                     c=cst.SimpleString(repr(column)))


def _with_transforms(site, pipeline, label: str):
    """torch applies `transform` to the image and `target_transform` to the int64 label."""
    transform = site.arg("transform")
    if transform is not None and site.code(transform) != "None":
        pipeline = _map(site, pipeline, transform, "image")
    cast = site.expr("{T}({i64})", T=site.ref("mindspore.dataset.transforms.TypeCast"),
                     i64=site.ref("mindspore.int64"))
    pipeline = _map(site, pipeline, cast, label)
    target = site.arg("target_transform")
    if target is not None and site.code(target) != "None":
        site.flag("review", f"{site.qualname}: target_transform gets a 0-d numpy int64 array in "
                            f"MindSpore (torch: a Python int)")
        pipeline = _map(site, pipeline, target, label)
    return pipeline


def _download(site, where: str) -> None:
    download = site.arg("download")
    if download is not None and site.code(download) != "False":
        site.flag("review", f"{site.qualname}: MindSpore readers do not download: put the files in {where}")


def vision_reader(site):
    """torchvision MNIST/FashionMNIST/KMNIST/CIFAR10/CIFAR100 -> the MindSpore reader of the same
    files, unshuffled, labels int64 like torch's."""
    target, subdirs, label = _READERS[site.qualname]
    root = site.arg("root")
    if root is None:
        raise Unconvertible("no root directory", "manual")
    train = site.arg("train", cst.Name("True"))
    try:
        usage = cst.SimpleString("'train'" if literal_value(train) else "'test'")
    except ValueError:
        usage = site.expr("'train' if {t} else 'test'", t=train)
    if "cifar" in subdirs[0]:
        # torchvision's files are python pickles (cifar-10-batches-py/), which MindSpore's
        # Cifar10Dataset does not read (it reads the binary release): a generated reader reads them
        # (and the binary release where only it is there)
        kind = "cifar10" if label == "label" else "cifar100"
        _download(site, f"{site.code(root)}/{'cifar-10-batches-py' if kind == 'cifar10' else 'cifar-100-python'}/")
        reader = cst.Call(func=generated(site, generated_data.msmigrate_cifar_reader), args=_commas([
            cst.Arg(root), cst.Arg(usage), *([] if kind == "cifar10" else [cst.Arg(cst.SimpleString("'cifar100'"))]),
            kwarg("shuffle", cst.Name("False"))]))
        fields = _dataset_attributes(site, reader, label)
        return fields(_indexable(site, _with_transforms(site, reader, label), reader))
    path_args = [cst.Arg(root), *[cst.Arg(cst.SimpleString(repr(d))) for d in subdirs]]
    path = cst.Call(func=site.ref("os.path.join"), args=_commas(path_args))
    _download(site, f"{site.code(root)}/{'/'.join(subdirs)}/")
    reader = cst.Call(func=site.ref(target), args=_commas([
        cst.Arg(path), kwarg("usage", usage), kwarg("shuffle", cst.Name("False"))]))
    pipeline = reader
    fields = _dataset_attributes(site, reader, label)
    return fields(_indexable(site, _with_transforms(site, pipeline, label), pipeline))


def _indexable(site, pipeline, samples):
    """The converted reader, indexable (`dataset[i]`) where the file may index it: it indexes the
    name, returns it, or passes it to a function of the project (mm-siamese-mnist picks pairs by
    index in another file). A MindSpore reader is not indexable: rules/generated/data.py's
    msmigrate_IndexedReader reads `samples` (untransformed) and applies the transforms per access."""
    name = site.assigned_name
    stmt = site.statement
    if name is None or stmt.body[0].value is not site.rw.original_call or not _may_be_indexed(site, name):
        return pipeline   # (the dataset built inside another call, DataLoader(MNIST(...)): not this name's)
    helper = generated(site, generated_data.msmigrate_OneColumn, generated_data.msmigrate_IndexedReader)
    options = [cst.Arg(pipeline), cst.Arg(samples)]
    for field in ("transform", "target_transform"):
        value = site.arg(field)
        if value is not None and site.code(value) != "None":
            options.append(kwarg(field, value))
    return cst.Call(func=helper, args=_commas(options))


def _may_be_indexed(site, name: str) -> bool:
    code = site.rw.module_code
    if re.search(rf"(?<![\w.]){re.escape(name)}\[", code):
        return True
    imports = site.rw.ctx.names.imports

    class Escapes(cst.CSTVisitor):
        found = False

        def visit_Return(self, node) -> None:
            if node.value is not None and any(isinstance(n, cst.Name) and n.value == name
                                              for n in _names_of(node.value)):
                self.found = True

        def visit_Call(self, node) -> None:
            callee = resolve(node.func, imports) or ""
            builtin = isinstance(node.func, cst.Name) and node.func.value in dir(builtins)
            library = is_source(callee) or callee.split(".")[0] in ("numpy", "mindspore")
            if not builtin and not library and any(isinstance(a.value, cst.Name) and a.value.value == name
                                                   for a in node.args):
                self.found = True   # a function of the project

    finder = Escapes()
    site.rw.module.visit(finder)
    return finder.found


def _names_of(expr) -> list:
    return [e.value for e in expr.elements] if isinstance(expr, (cst.Tuple, cst.List)) else [expr]


# torchvision's class names of the datasets whose names are fixed (CIFAR100 reads its meta file)
_CLASSES = {
    "torchvision.datasets.MNIST": [f"{i} - {w}" for i, w in enumerate(
        "zero one two three four five six seven eight nine".split())],
    "torchvision.datasets.FashionMNIST": ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
                                          "Shirt", "Sneaker", "Bag", "Ankle boot"],
    "torchvision.datasets.KMNIST": ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"],
    "torchvision.datasets.CIFAR10": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                                     "ship", "truck"],
}
# the files torchvision's ImageFolder lists (has_file_allowed_extension, case-insensitive)
_IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
# torchvision's MNIST family keeps the pre-0.2 names as aliases (with a warning)
_LEGACY_FIELDS = {"train_data": "data", "test_data": "data", "train_labels": "targets", "test_labels": "targets"}
# what torchvision's .targets / .data are: a tensor (MNIST family) or a list / numpy array (CIFAR)
_TENSOR_FIELDS = ("torchvision.datasets.MNIST", "torchvision.datasets.FashionMNIST", "torchvision.datasets.KMNIST")


def _dataset_attributes(site, reader, label: str):
    """`train_set.targets` / `.data` / `.classes` / `.class_to_idx` of a torchvision dataset, where
    the file reads them: set on the converted reader from a second, untransformed read of the same
    files (torch loads them when the dataset is built, too). Writing `.data`/`.targets` (a subset
    trick) does not change what a reader yields: marked."""
    inline = {}   # field -> value, for a dataset made inline in `loader = DataLoader(MNIST(...), ...)`
    loader = _loader_of_inline_source(site)
    name = site.assigned_name if loader is None else loader + ".dataset"   # (`loader.dataset.classes`)
    if name is None:
        return lambda dataset: dataset
    code = site.rw.module_code
    attr = (rf"(?<![\w.]){re.escape(name)}\.(targets|data|classes|class_to_idx|samples|imgs|"
            rf"train_data|test_data|train_labels|test_labels)\b")
    read = {m.group(1) for m in re.finditer(attr + r"(?!\s*(=[^=]|[-+*/]=))", code)}
    written = {m.group(1) for m in re.finditer(attr + r"(\[[^\]]*\])?\s*(=[^=]|[-+*/]=)", code)}
    if written:
        site.flag("manual", f"{site.qualname}: {name}.{'/'.join(sorted(written))} is assigned, but a MindSpore "
                            f"reader reads its files: take a prefix with {name}.take(n), filter rows with "
                            f"{name}.filter(...), or build a GeneratorDataset from the arrays", stop=True)
    folder = site.qualname == "torchvision.datasets.ImageFolder"
    for field in sorted(read):
        value = None
        alias = _LEGACY_FIELDS.get(field) if site.qualname in _TENSOR_FIELDS else None
        if field in _LEGACY_FIELDS and alias is None:
            site.flag("manual", f"{site.qualname}: {name}.{field} has no MindSpore reader equivalent: "
                                f"build it from {name}.create_tuple_iterator(output_numpy=True)", stop=True)
            continue
        if alias == "targets" or field == "targets":
            labels = site.expr("[int(row[0]) for row in {r}.create_tuple_iterator(columns=[{c}], output_numpy=True, "
                               "num_epochs=1)]", r=reader, c=cst.SimpleString(repr(label)))
            value = site.expr("{T}({np}({l}, dtype={i64}))", T=site.ref("mindspore.Tensor"),
                              np=site.ref("numpy.array"), l=labels, i64=site.ref("numpy.int64")) \
                if site.qualname in _TENSOR_FIELDS else labels
        elif (alias or field) == "data" and not folder:
            images = site.expr("{stack}([row[0] for row in {r}.create_tuple_iterator(columns=['image'], "
                               "output_numpy=True, num_epochs=1)])", stack=site.ref("numpy.stack"), r=reader)
            value = site.expr("{T}({i}[..., 0])", T=site.ref("mindspore.Tensor"), i=images) \
                if site.qualname in _TENSOR_FIELDS else images   # MNIST: N x 28 x 28, CIFAR: N x 32 x 32 x 3
        elif field in ("samples", "imgs") and folder:
            value = site.expr(
                "[({join}(d, f), i) for i, c in enumerate(sorted(e.name for e in {scandir}({root}) if e.is_dir())) "
                "for d, _, fs in sorted({walk}({join}({root}, c), followlinks=True)) for f in sorted(fs) "
                "if f.lower().endswith({ext})]", join=site.ref("os.path.join"), scandir=site.ref("os.scandir"),
                walk=site.ref("os.walk"), root=site.arg("root"), ext=cst.parse_expression(repr(_IMG_EXTENSIONS)))
        elif field in ("classes", "class_to_idx"):
            if folder:   # torchvision's find_classes: the sorted sub-directory names
                classes = site.expr("sorted(entry.name for entry in {scandir}({root}) if entry.is_dir())",
                                    scandir=site.ref("os.scandir"), root=site.arg("root"))
            elif site.qualname in _CLASSES:
                classes = cst.parse_expression(repr(_CLASSES[site.qualname]))
            else:
                classes = None
            if classes is not None and field == "classes":
                value = classes
            elif classes is not None:
                value = site.expr("{c: i for i, c in enumerate({k})}", k=classes)
        if value is None:
            site.flag("manual", f"{site.qualname}: {name}.{field} has no MindSpore reader equivalent: "
                                f"build it from {name}.create_tuple_iterator(output_numpy=True)", stop=True)
            continue
        kind = site.qualname.rsplit(".", 1)[-1]
        if loader is not None:
            inline[field] = value
            continue
        site.after(site.stmt(f"{name}.{field} = {{v}}  # torchvision's {kind}.{field}\n", v=value))
    if not inline:
        return lambda dataset: dataset
    helper = generated(site, generated_data.msmigrate_dataset_fields)
    return lambda dataset: cst.Call(helper, [cst.Arg(dataset), *(kwarg(f, v) for f, v in inline.items())])


def _loader_of_inline_source(site) -> str | None:
    """L, where this call is the dataset argument of `L = DataLoader(<this call>, ...)`."""
    stmt = site.statement
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and dotted(small.targets[0].target)
            and isinstance(small.value, cst.Call)
            and (site.rw.scopes.resolve(small.value.func) or "").endswith("DataLoader")):
        return None
    first = small.value.args[0] if small.value.args and small.value.args[0].keyword is None else \
        next((a for a in small.value.args if a.keyword is not None and a.keyword.value == "dataset"), None)
    original = site.rw.original_call
    if first is None or original is None or not first.value.deep_equals(original):
        return None
    return dotted(small.targets[0].target)


def image_folder(site):
    """ImageFolder(root) -> ImageFolderDataset(root, decode=True): classes are the sorted
    sub-directory names, images decoded to RGB HWC uint8 as PIL's convert('RGB')."""
    root = site.arg("root")
    if root is None:
        raise Unconvertible("no root directory", "manual")
    for name in ("loader", "is_valid_file"):
        if site.has(name) and site.code(site.arg(name)) != "None":
            raise Unconvertible(f"{name}= has no MindSpore equivalent", "manual")
    # torchvision lists image files only (case-insensitive extensions); MindSpore every file
    extensions = cst.parse_expression(repr([e for ext in _IMG_EXTENSIONS for e in (ext, ext.upper())]))
    reader = cst.Call(func=site.ref("mindspore.dataset.ImageFolderDataset"), args=_commas([
        cst.Arg(root), kwarg("shuffle", cst.Name("False")), kwarg("decode", cst.Name("True")),
        kwarg("extensions", extensions)]))
    fields = _dataset_attributes(site, cst.Call(func=site.ref("mindspore.dataset.ImageFolderDataset"), args=_commas([
        cst.Arg(root), kwarg("shuffle", cst.Name("False")), kwarg("extensions", extensions)])), "label")
    return fields(_indexable(site, _with_transforms(site, reader, "label"), reader))


# ---- torchvision transforms ---------------------------------------------------------------

_BORDERS = {"constant": "CONSTANT", "edge": "EDGE", "reflect": "REFLECT", "symmetric": "SYMMETRIC"}


def border(value, site):
    """padding_mode='reflect' -> vision.Border.REFLECT."""
    try:
        mode = literal_value(value)
    except ValueError:
        raise Unconvertible("padding_mode is not a literal") from None
    if mode not in _BORDERS:
        raise Unconvertible(f"padding_mode={mode!r}")
    return site.ref(f"mindspore.dataset.vision.Border.{_BORDERS[mode]}")


def identity_fn(site):
    """transforms.Lambda(f) -> f: MindSpore pipelines take Python callables directly."""
    fn = site.arg("lambd")
    if fn is None:
        raise Unconvertible("Lambda without a function", "manual")
    return fn


_CHW_OK = ("Normalize", "RandomErasing", "ToPIL", "LinearTransformation", "Rescale")


def compose(site):
    """torchvision runs the ops after ToTensor on CHW tensors; MindSpore's vision ops (except
    Normalize(is_hwc=False) and RandomErasing) expect HWC images: say where that breaks."""
    ops = site.arg("transforms")
    if isinstance(ops, (cst.List, cst.Tuple)):
        vision = site.code(site.ref("mindspore.dataset.vision")) + "."
        to_tensor = vision + "ToTensor"
        seen = False
        for el in ops.elements:
            value = el.value
            func = site.code(value.func) if isinstance(value, cst.Call) else ""
            if func == to_tensor or _holds(site, value, to_tensor):   # (PILToTensor's Compose: CHW too)
                seen = True
            elif seen and func.startswith(vision) and func[len(vision):] not in _CHW_OK:
                site.flag("review", f"{site.qualname}: {func[len(vision):]} after ToTensor gets a CHW float "
                                    f"tensor; MindSpore's version expects an HWC image: move it before ToTensor")
    return site.call(site.record.target)


def _to_gray(site) -> cst.BaseExpression:
    return site.expr("{C}({M})", C=site.ref("mindspore.dataset.vision.ConvertColor"),
                     M=site.ref("mindspore.dataset.vision.ConvertMode.COLOR_RGB2GRAY"))


def _gray_to_rgb(site) -> cst.BaseExpression:
    return site.expr("{C}({M})", C=site.ref("mindspore.dataset.vision.ConvertColor"),
                     M=site.ref("mindspore.dataset.vision.ConvertMode.COLOR_GRAY2RGB"))


def grayscale(site):
    """Grayscale(1) -> ConvertColor(RGB2GRAY) (an HxW image, like PIL's 'L'); Grayscale(3) also
    converts back to three equal channels."""
    try:
        n = site.literal("num_output_channels", 1)
    except ValueError:
        raise Unconvertible("num_output_channels is not a literal", "manual") from None
    if n == 1:
        return _to_gray(site)
    if n == 3:
        return site.expr("{C}([{g}, {rgb}])", C=site.ref("mindspore.dataset.transforms.Compose"),
                         g=_to_gray(site), rgb=_gray_to_rgb(site))
    raise Unconvertible(f"num_output_channels={n}", "manual")


def random_grayscale(site):
    """RandomGrayscale(p): with probability p, grey in three channels (torch keeps the channels)."""
    p = site.arg("p", cst.Float("0.1"))
    return site.expr("{A}([{g}, {rgb}], prob={p})", A=site.ref("mindspore.dataset.transforms.RandomApply"),
                     g=_to_gray(site), rgb=_gray_to_rgb(site), p=p)


def eager_transform(site):
    """`x = transform(img)` outside a dataset -> msmigrate_apply_transform(transform, img):
    MindSpore's transforms return NumPy arrays where torchvision's return tensors, and an eager
    Compose returns a 1-tuple; a PIL image stays a PIL image until ToTensor, in both (a Compose
    of Resize and crops gives torch's PIL image, whose .size and .crop the program may use)."""
    call = site.node
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        # (instance_call hooks cannot raise Unconvertible: the engine does not catch it there)
        site.flag("review", "a transform applied outside a pipeline returns numpy arrays in MindSpore")
        return call
    func = generated(site, generated_vision.msmigrate_apply_transform)
    return cst.Call(func, [cst.Arg(call.func), cst.Arg(call.args[0].value)])


# ---- torchvision's unscaled conversions (PILToTensor, v2.ToImage, v2.ToDtype) -------------

def _holds(site, value, func: str) -> bool:
    """`value` is a call whose list argument (a Compose's) has a call of `func` (MindSpore code)."""
    if not (isinstance(value, cst.Call) and value.args and isinstance(value.args[0].value, (cst.List, cst.Tuple))):
        return False
    return any(isinstance(el.value, cst.Call) and site.code(el.value.func) == func
               for el in value.args[0].value.elements)


def _chw_uint8(site) -> cst.BaseExpression:
    """torch's CHW uint8 tensor of an 8-bit image, unscaled. MindSpore has no op that keeps the
    values and gives a greyscale (H, W) image its channel dim (HWC2CHW leaves it H x W), so
    ToTensor's x * (1/255) (CHW, (1, H, W) for greyscale) is scaled back: Rescale(255, 0.5) and
    the truncating cast to uint8 give x exactly (the float error is below 1e-4)."""
    return site.expr("{C}([{V}.ToTensor(), {V}.Rescale(255.0, 0.5), {T}({u8})])",
                     C=site.ref("mindspore.dataset.transforms.Compose"), V=site.ref("mindspore.dataset.vision"),
                     T=site.ref("mindspore.dataset.transforms.TypeCast"), u8=site.ref("mindspore.uint8"))


def pil_to_tensor(site):
    """PILToTensor() -> the CHW uint8 tensor of the image (no scaling), as torch gives it for
    8-bit images (modes L, RGB, RGBA, P); a 16/32-bit or float image ('I;16', 'I', 'F') keeps its
    dtype in torch and is clipped to uint8 here (a rare input: not marked)."""
    return _chw_uint8(site)


def to_image(site):
    """v2.ToImage() -> PILToTensor's conversion: the same values for a PIL image or an HWC uint8
    array; torch also takes tensors (kept as they are, CHW) and arrays of any dtype."""
    site.flag("review", f"{site.qualname}: converted for 8-bit PIL images and HWC uint8 arrays (CHW uint8 "
                        "out, as torch); a tensor (torch keeps it, already CHW) or an array of another dtype "
                        "gives other values here")
    return _chw_uint8(site)


_UINT8_MAKERS = ("PILToTensor", "ToImage")
_FLOATS = {"float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
           "float64": "float64", "double": "float64"}


def _after_uint8(site) -> bool:
    """Every ToDtype of the statement comes right after a PILToTensor / ToImage in its list
    (`Compose([PILToTensor(), ToDtype(torch.float32, scale=True)])`): its input is uint8."""
    found = 0
    stmt = site.statement
    if stmt is None:
        return False

    class Lists(cst.CSTVisitor):
        def visit_Call(self, node):
            nonlocal found
            if (site.rw.scopes.resolve(node.func) or "").endswith(".ToDtype"):
                found += 1

        def visit_List(self, node):
            self._check(node)

        def visit_Tuple(self, node):
            self._check(node)

        def _check(self, node):
            nonlocal found
            els = [e.value for e in node.elements]
            for i, el in enumerate(els):
                if isinstance(el, cst.Call) and (site.rw.scopes.resolve(el.func) or "").endswith(".ToDtype"):
                    prev = els[i - 1] if i else None
                    q = site.rw.scopes.resolve(prev.func) if isinstance(prev, cst.Call) else None
                    if q and q.startswith("torchvision.transforms.") and q.rsplit(".", 1)[1] in _UINT8_MAKERS:
                        found -= 1

    stmt.visit(Lists())
    return found == 0


def to_dtype(site):
    """v2.ToDtype(dtype, scale=False) -> TypeCast(dtype) (torch's .to(dtype): the same truncating
    cast). scale=True to float32 -> Rescale(1/255, 0): torch's uint8 -> float32 x * (1/255), the
    same float32 values; torch scales by the input dtype's range (a float input is not scaled),
    so it is marked unless the input is visibly uint8 (right after PILToTensor / ToImage)."""
    dtype = site.arg("dtype")
    if dtype is None or isinstance(dtype, cst.Dict):
        raise Unconvertible("a dtype per input type (dict): convert by hand", "manual")
    try:
        scale = site.literal("scale", False)
    except ValueError:
        raise Unconvertible("scale is not a literal", "manual") from None
    cast = site.ref("mindspore.dataset.transforms.TypeCast")
    if not scale:
        return site.expr("{T}({d})", T=cast, d=dtype)
    kind = _FLOATS.get(site.code(dtype).rsplit(".", 1)[-1])
    if kind is None:
        raise Unconvertible(f"scale=True to {site.code(dtype)}: rescaling to an integer "
                            "dtype has no MindSpore transform; convert by hand", "manual")
    rescale = site.expr("{V}.Rescale(1.0 / 255.0, 0.0)", V=site.ref("mindspore.dataset.vision"))
    if not _after_uint8(site):
        site.flag("review", f"{site.qualname}(scale=True): scales as from uint8 (x / 255); torch scales by "
                            "the input's dtype range and leaves a float input unscaled")
    if kind == "float32":
        return rescale
    site.flag("review", f"{site.qualname}(scale=True) to {kind}: computed in float32 (Rescale), then cast")
    return site.expr("{C}([{r}, {T}({d})])", C=site.ref("mindspore.dataset.transforms.Compose"), r=rescale,
                     T=cast, d=dtype)
