"""torch.save / torch.load / load_state_dict -> ms.save_checkpoint / ms.load_checkpoint /
Parameters written in place with ops.assign.

MindSpore appends '.ckpt' to a file name without it when saving and only loads '*.ckpt' names, so
literal '.pt'/'.pth' paths are renamed on both sides (other literal names get '.ckpt' appended);
a name the source does not show (a variable) is kept exactly by generated functions
(rules/generated/checkpoint_files.py).
torch's strict load raises on missing or unexpected names: the check is emitted inline.
"""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible, kwarg
from msmigrate.names import dotted, fresh_name, resolve, walk
from msmigrate.rules.transforms.common import generated_text
from msmigrate.rules.transforms.dtypes import _scope_values, bound_values

_TORCH_SUFFIXES = (".pt", ".pth", ".pth.tar", ".tar", ".bin")
# the key an optimizer's learning rates are saved under when its state_dict is saved alone
_OPTIMIZER_KEY = "optimizer"


def _ckpt_path(site, path: cst.BaseExpression) -> cst.BaseExpression:
    """'model.pt' -> 'model.ckpt' (also the last literal part of an f-string, the template of
    '{}.pkl'.format(n) and '%d.pkl' % n); the path itself where it visibly ends in .ckpt; None
    where the source does not show the name."""
    if isinstance(path, cst.SimpleString):
        text = path.evaluated_value
        if isinstance(text, str):
            new = _renamed(text)
            if new is not None:
                return path.with_changes(value=path.prefix + path.quote + new + path.quote) \
                    if new.isprintable() and path.quote not in new and "\\" not in new else \
                    cst.SimpleString(repr(new))
            return path
    if isinstance(path, cst.Call) and isinstance(path.func, cst.Attribute) and path.func.attr.value == "format" \
            and isinstance(path.func.value, cst.SimpleString):
        # '{}.pkl'.format(epoch): the literal's name, renamed as a literal path is
        template = _ckpt_path(site, path.func.value)
        return path.with_changes(func=path.func.with_changes(value=template))
    if isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Modulo) \
            and isinstance(path.left, cst.SimpleString):   # '%d.pkl' % epoch
        return path.with_changes(left=_ckpt_path(site, path.left))
    if isinstance(path, cst.FormattedString) and path.parts and isinstance(path.parts[-1], cst.FormattedStringText):
        last = path.parts[-1]
        new = _renamed(last.value)
        if new is not None:
            return path.with_changes(parts=[*path.parts[:-1], last.with_changes(value=new)])
        if last.value.endswith(".ckpt"):
            return path
    return None


def _checkpoint_call(site, action: str, path, args: list[cst.Arg]) -> cst.Call:
    """ms.save_checkpoint(*args, renamed path) / ms.load_checkpoint(renamed path, *args) where the
    source shows the file name; else the generated function keeping the program's own name
    (rules/generated/checkpoint_files.py), also where the file names it elsewhere (`os.replace(
    '.model.pth', 'model.pth')` after saving, `os.path.exists('best.pth')`): a renamed file would not
    be there."""
    renamed = _ckpt_path(site, path)
    if renamed is not None and isinstance(path, cst.SimpleString) and path.evaluated_value in _named_elsewhere(site):
        renamed = None
    if renamed is not None:
        func = site.ref(f"mindspore.{action}_checkpoint")
    else:
        func, renamed = generated_text(site.rw.imports, "checkpoint_files", f"msmigrate_{action}_checkpoint"), path
    return site.call(func, args[:1] + [cst.Arg(renamed)] + args[1:] if action == "save" else [cst.Arg(renamed), *args])


def _named_elsewhere(site) -> set[str]:
    """The string literals of the file other than the file names torch.save / torch.load are given."""
    module = site.rw.module
    cached = getattr(site.rw, "_msmigrate_named_elsewhere", None)
    if cached is not None and cached[0] is module:
        return cached[1]
    paths = {id(path) for _, _, path in _checkpoint_calls(site) if path is not None}
    named = {node.evaluated_value for node in walk(module)
             if isinstance(node, cst.SimpleString) and id(node) not in paths and isinstance(node.evaluated_value, str)}
    site.rw._msmigrate_named_elsewhere = (module, named)
    return named


def _checkpoint_calls(site) -> list[tuple[str, cst.BaseExpression | None, cst.BaseExpression | None]]:
    """(torch.save or torch.load, the object saved or None, the file) of each such call of the file
    (read once per file: every save and load site asks)."""
    cached = getattr(site.rw, "_msmigrate_checkpoint_calls", None)
    if cached is not None and cached[0] is site.rw.module:
        return cached[1]
    imports = site.rw.ctx.names.imports
    found = []
    for node in walk(site.rw.module):
        q = resolve(node.func, imports) if isinstance(node, cst.Call) else None
        if q not in ("torch.save", "torch.load"):
            continue
        pos = [a.value for a in node.args if a.keyword is None and not a.star]
        kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if q == "torch.save":
            found.append((q, pos[0] if pos else kw.get("obj"), pos[1] if len(pos) > 1 else kw.get("f")))
        else:
            found.append((q, None, pos[0] if pos else kw.get("f")))
    site.rw._msmigrate_checkpoint_calls = (site.rw.module, found)
    return found


def _saves_cell(site, name: str) -> bool:
    """Does the file torch.save the module bound to `name` (`torch.save(model, f)`)?"""
    return any(q == "torch.save" and isinstance(obj, cst.Name) and obj.value == name and _is_cell(site, obj)
               for q, obj, _ in _checkpoint_calls(site))


def _loads_cell(site, name: str) -> bool:
    """Does the file load a whole module back into `name` (`model = torch.load(f)`), which
    msmigrate_loaded_cell does from the Cell it saved?"""
    return re.search(rf"(?<![\w.]){re.escape(name)}\s*=\s*torch\.load\(", site.rw.module_code) is not None


def _renamed(text: str) -> str | None:
    if text.endswith(".ckpt"):
        return None
    for suffix in _TORCH_SUFFIXES:
        if text.endswith(suffix):
            return text[: -len(suffix)] + ".ckpt"
    # any other name ('net.pkl'): MindSpore would save 'net.pkl.ckpt' and refuse to load 'net.pkl';
    # naming it so on both sides keeps what the program saves loadable
    return text + ".ckpt"


def _params_of(node, method: str = "parameters_dict") -> cst.BaseExpression | None:
    """`m` for `m.parameters_dict()` (state_dict() after its own record), or for another method
    without arguments (`m.state_dict()`: the source, before conversion)."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value == method and not node.args:
        return node.func.value
    return None


def _is_optimizer(site, expr) -> bool:
    return _made_by(site, expr, ("torch.optim.",))


def _is_cell(site, expr) -> bool:
    return _made_by(site, expr, ("torch.nn.", "torch.optim."))


def _made_by(site, expr, prefixes: tuple[str, ...]) -> bool:
    rec = site.instance_record(expr)
    return rec is not None and rec.torch.startswith(prefixes)


def _is_table(node) -> bool:
    """A parameter table, before (`m.state_dict()`) or after (`m.parameters_dict()`) conversion."""
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("state_dict", "parameters_dict"))


def _holds_table(site, expr, depth: int = 0) -> bool:
    """A parameter table, a copy of one (`copy.deepcopy(m.state_dict())`, `dict(sd)`, `sd.copy()`,
    `{k: v.clone() for k, v in sd.items()}`), or a name every binding of which in its scope is
    one or None: `best_state = copy.deepcopy(model.state_dict())` saved as {"model": best_state}."""
    if depth > 4:
        return False
    if _is_table(expr):
        return True
    if isinstance(expr, cst.IfExp):   # `m.module.state_dict() if parallel else m.state_dict()`
        return _holds_table(site, expr.body, depth + 1) and _holds_table(site, expr.orelse, depth + 1)
    if isinstance(expr, cst.Call):
        func = resolve(expr.func, site.rw.ctx.names.imports) or ""
        if func in ("copy.deepcopy", "copy.copy") or (isinstance(expr.func, cst.Name) and expr.func.value == "dict"
                                                      and site.rw.scopes.resolve(expr.func) is None):
            return len(expr.args) == 1 and _holds_table(site, expr.args[0].value, depth + 1)
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "copy" and not expr.args:
            return _holds_table(site, expr.func.value, depth + 1)
        return False
    if isinstance(expr, cst.DictComp):
        source = expr.for_in.iter
        return isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) \
            and source.func.attr.value == "items" and _holds_table(site, source.func.value, depth + 1)
    if isinstance(expr, cst.Name):
        values = [v for v in bound_values(site.rw, expr.value) or [None]
                  if not (isinstance(v, cst.Name) and v.value == "None")]
        return bool(values) and all(v is not None and _holds_table(site, v, depth + 1) for v in values)
    return False


def _pickled(site, obj, scope=None) -> bool:
    """torch.save of plain data (an array, a list of losses, a vocabulary, a Tensor): no parameter
    table, no dict holding one, no module or optimizer. It stays a pickle: MindSpore Tensors pickle,
    a MindSpore checkpoint holds only parameters and scalars."""
    if _is_table(obj) or _is_cell(site, obj):
        return False
    named = _named_dict(site, obj, scope)
    if named is not None:
        obj = named
    if isinstance(obj, cst.Dict):   # (a scheduler's state_dict() is plain data: `{"scheduler": s.state_dict()}`)
        return not any(isinstance(el, cst.StarredDictElement) or _is_table(el.value) and not (
            isinstance(el.value.func.value, (cst.Name, cst.Attribute))
            and _made_by(site, el.value.func.value, ("torch.optim.lr_scheduler.",))) for el in obj.elements)
    return True


def _pickled_paths(site) -> set[str]:
    """The code of every path the file's torch.save calls pickle to (see `_pickled`)."""
    found = getattr(site.rw, "pickled_paths", None)   # once per file
    if found is None:
        found = site.rw.pickled_paths = {site.code(path) for q, obj, path in _checkpoint_calls(site)
                                         if q == "torch.save" and obj is not None and path is not None
                                         and _pickled(site, obj, _scope_of(site, obj))}
    return found


def _named_dict(site, obj, scope=None) -> cst.Dict | None:
    """The dict literal a name saved with torch.save is bound to (`checkpoint = {'model':
    model.state_dict(), ...}; torch.save(checkpoint, path)`), where it is bound once in its scope
    (`scope`: the function around the save, or the statement being converted's)."""
    if not isinstance(obj, cst.Name):
        return None
    values = _scope_values(scope, obj.value) if scope is not None else bound_values(site.rw, obj.value)
    return values[0] if values and len(values) == 1 and isinstance(values[0], cst.Dict) else None


def _scope_of(site, node):
    """The innermost function of the file around `node` (the module where none is)."""
    scope = site.rw.module
    for fn in walk(site.rw.module):
        if isinstance(fn, cst.FunctionDef) and any(n is node for n in walk(fn.body)):
            scope = fn
    return scope


def _pickle_save(site, obj, path):
    return site.expr("{Path}({p}).write_bytes({dumps}({obj}))", Path=site.ref("pathlib.Path"), p=path,
                     dumps=site.ref("pickle.dumps"), obj=obj)


def save(site):
    obj, path = site.arg("obj"), site.arg("f")
    if obj is None or path is None:
        raise Unconvertible("torch.save without obj and f", "manual")
    if _pickled(site, obj):
        return _pickle_save(site, obj, path)
    owner = _params_of(obj)
    if owner is not None and _is_optimizer(site, owner):   # with its learning rates (see _save_dict)
        func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_optimizer_lrs")
        table = cst.Dict([cst.StarredDictElement(obj),
                          cst.StarredDictElement(_plain_call(func, owner, cst.SimpleString(repr(_OPTIMIZER_KEY))))])
        return _checkpoint_call(site, "save", path, [cst.Arg(table)])
    if owner is not None:  # torch.save(model.state_dict(), p)
        return _checkpoint_call(site, "save", path, [cst.Arg(owner)])
    if isinstance(obj, cst.Dict):
        return _save_dict(site, obj, path)
    named = _named_dict(site, obj)
    if named is not None:   # the entries read from the saved name, classified by its literal
        return _save_dict(site, named, path, via=obj)
    if _is_cell(site, obj):  # a whole module: MindSpore stores parameters only
        if not (isinstance(obj, cst.Name) and _loads_cell(site, obj.value)):
            site.flag("review", f"{site.qualname}: torch pickles the whole module; a MindSpore checkpoint holds "
                                f"its parameters only: the loading side must build the Cell and load_param_into_net")
        return _checkpoint_call(site, "save", path, [cst.Arg(obj)])
    raise Unconvertible(f"torch.save of {site.code(obj)}: only state_dicts, modules and checkpoint dicts of "
                        f"state_dicts and scalars map to MindSpore checkpoints", "manual")


def _save_dict(site, obj: cst.Dict, path, via=None):
    """{'model': m.state_dict(), 'optimizer': o.state_dict(), 'epoch': e} -> one flat checkpoint:
    the parameter tables merged, the rest as append_dict (see msmigrate_checkpoint_entries). An optimizer's
    table holds the current parameters too (under their own names): it is merged first, so a
    model table saved with it, a copy of the best weights maybe, keeps its values; its learning
    rates, which it leaves out, are saved under the dict's key. `via`: the name the dict literal
    `obj` is bound to and saved as (the entries are read from it: `checkpoint['model']`). Each
    table's names are saved too: loaded (msmigrate_Checkpoint), `ckpt['model']` gives that table
    back and `ckpt['epoch']` the number."""
    tables, extras, indexed = [], [], []
    for el in obj.elements:
        if not isinstance(el, cst.DictElement):
            raise Unconvertible("a checkpoint dict with ** entries", "manual")
        lrs = None
        value = el.value if via is None else cst.Subscript(via, [cst.SubscriptElement(cst.Index(el.key))])
        owner = _params_of(el.value) if via is None else _params_of(el.value, "state_dict")
        scheduler = _scheduler_state_of(el.value) if via is None else \
            (owner if owner is not None and _made_by(site, owner, ("torch.optim.lr_scheduler.",)) else None)
        if scheduler is not None:   # its entries under the dict's key, as Parameters
            func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_scheduler_entries")
            tables.append(_plain_call(func, scheduler, el.key))
        elif owner is not None and _is_optimizer(site, owner):
            tables.insert(0, value)
            func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_optimizer_lrs")
            lrs = _plain_call(func, owner, el.key)
            tables.append(lrs)
        elif owner is not None or _holds_table(site, el.value):
            tables.append(value)
        elif isinstance(el.value, (cst.Dict, cst.List, cst.Tuple, cst.Set)) or (
                isinstance(el.value, cst.Call) and isinstance(el.value.func, cst.Attribute)
                and el.value.func.attr.value == "state_dict"):
            raise Unconvertible(f"checkpoint entry {site.code(el.key)}: {site.code(el.value)} is not a parameter "
                                f"table or a scalar (append_dict takes int, float, bool, str)", "manual")
        else:
            extras.append(el.with_changes(value=value, comma=cst.MaybeSentinel.DEFAULT))
            continue
        if scheduler is None:   # its names, so that ckpt[key] gives the table back (msmigrate_Checkpoint)
            indexed.append(cst.DictElement(el.key, value if lrs is None else
                                           cst.Dict([cst.StarredDictElement(value), cst.StarredDictElement(lrs)])))
    merged = tables[0] if len(tables) == 1 else cst.Dict([cst.StarredDictElement(t) for t in tables])
    args = [cst.Arg(merged)]
    func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_checkpoint_entries")
    args.append(kwarg("append_dict", _plain_call(func, cst.Dict(_one_line(extras)), cst.Dict(_one_line(indexed)))))
    return _checkpoint_call(site, "save", path, args)


def _one_line(elements: list) -> list:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [e.with_changes(comma=comma) for e in elements[:-1]] + [e.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                                                                   for e in elements[-1:]]


def load(site):
    path = site.arg("f")
    if path is None:
        raise Unconvertible("torch.load without a file", "manual")
    if site.code(path) in _pickled_paths(site):   # what this file pickled with torch.save
        return site.expr("{loads}({Path}({p}).read_bytes())", loads=site.ref("pickle.loads"),
                         Path=site.ref("pathlib.Path"), p=path)
    try:
        weights_only = site.literal("weights_only", None)
    except ValueError:
        weights_only = None
    if not any(q == "torch.save" for q, _, _ in _checkpoint_calls(site)):
        site.flag("review", f"{site.qualname}: this program saves no checkpoint, so it reads one written "
                            f"elsewhere: a file torch.save wrote is no MindSpore checkpoint; convert it once "
                            f"with `msmigrate weights FILE.pt -o FILE.ckpt --model ...`")
    name = site.assigned_name
    used_as_module = name is not None and re.search(
        rf"(?<![\w.]){re.escape(name)}(\.(eval|train|forward|to|cuda)\s*\(|\()", site.rw.module_code)
    loaded = _checkpoint_call(site, "load", path, [])
    if name is not None and _saves_cell(site, name):   # the module this file saved under that name
        func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_loaded_cell")
        return cst.Call(func, [cst.Arg(cst.Name(name)), cst.Arg(loaded)])
    if weights_only is False or used_as_module:
        site.flag("manual", f"{site.qualname}: this loads a pickled object (a whole module?); a MindSpore "
                            f"checkpoint is a parameter table: build the Cell, then load_param_into_net")
    if name is not None and not re.search(rf"(?<![\w.]){re.escape(name)}\s*\[|\bin\s+{re.escape(name)}\b|"
                                          rf"(?<![\w.]){re.escape(name)}\.get\(", site.rw.module_code):
        return loaded   # a table only loaded or passed on
    # read as torch's checkpoint dict: ckpt['model'] is the table saved under 'model' (see save)
    func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_Checkpoint", "msmigrate_checkpoint_dict")
    return cst.Call(func, [cst.Arg(loaded)])


def scheduler_state_dict(site):
    """scheduler.state_dict() -> torch's dict, read by a generated function (a MindSpore 2.10
    scheduler has none); inside a torch.save dict, its entries (`_save_dict`)."""
    func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_scheduler_state")
    return site.call(func, [cst.Arg(site.receiver)])


def scheduler_load_state_dict(site):
    """scheduler.load_state_dict(sd) -> its attributes set from sd; `ckpt['scheduler']` of a flat
    checkpoint (see save) reads the entries saved under that key."""
    sd = site.arg("state_dict")
    if sd is None:
        raise Unconvertible("load_state_dict without a state dict", "manual")
    func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_load_scheduler_state")
    key = _string_key(sd)
    if key is not None:
        return site.call(func, [cst.Arg(site.receiver), cst.Arg(sd.value), cst.Arg(key)])
    return site.call(func, [cst.Arg(site.receiver), cst.Arg(sd)])


def _string_key(node):
    """'scheduler' of `ckpt['scheduler']` (a name indexed by a string literal), else None."""
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1 \
            and isinstance(node.slice[0].slice, cst.Index) and isinstance(node.slice[0].slice.value, cst.SimpleString):
        return node.slice[0].slice.value
    return None


def _plain_call(func, *args) -> cst.Call:
    """`func(a, b)` on one line (not in the layout of the call being converted)."""
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return cst.Call(func, [cst.Arg(a, comma=comma) for a in args[:-1]] + [cst.Arg(args[-1])])


def _scheduler_state_of(node):
    """`s` of a converted `msmigrate_scheduler_state(s)` (scheduler.state_dict()), else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and \
            node.func.value.startswith("msmigrate_scheduler_state") and len(node.args) == 1:
        return node.args[0].value
    return None


def _statement_call(site) -> bool:
    """Is this call the whole expression statement being converted?"""
    stmt = site.statement
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call)
            and isinstance(stmt.body[0].value.func, cst.Attribute)
            and stmt.body[0].value.func.attr.value == "load_state_dict")


def _fresh(site, base: str) -> str:
    return fresh_name(base, site.rw.ctx.names.taken | set(site.rw.ctx.names.imports))


def _prefixes_networks(site) -> bool:
    """The training-loop pass gave some network of the file a parameter-name prefix (its
    `X.update_parameters_name('X.')` statements are in the module by now)."""
    if getattr(site.rw, "_prefixes_networks", None) is None:
        site.rw._prefixes_networks = "update_parameters_name(" in site.rw.module_code
    return site.rw._prefixes_networks


def load_state_dict(site):
    """model.load_state_dict(sd) -> each of the model's Parameters written in place with
    ops.assign from the table, and torch's strict check (missing / unexpected names raise).
    Not ms.load_param_into_net: it gives each Parameter new data (set_data), and in MindSpore 2.10
    a Parameter given new data after a compiled step (or an optimizer update) has used it is no
    longer the one that step reads and updates: a checkpoint loaded to resume training, or the
    best weights loaded between epochs, were silently lost (tests/test_checkpoint_parity.py).
    `ckpt['model']` of a flat checkpoint (see save) loads from the whole table: only missing
    names are checked there, the table also holds the other entries. A call whose value is used
    (`missing, unexpected = m.load_state_dict(sd, strict=False)`) gives the two lists."""
    sd = site.arg("state_dict")
    if sd is None:
        raise Unconvertible("load_state_dict without a state dict", "manual")
    try:
        strict = site.literal("strict", True)
    except ValueError:
        raise Unconvertible("strict= is not a literal", "manual") from None
    if site.has("assign"):
        site.flag("review", f"{site.qualname}: assign= has no MindSpore equivalent (values are always copied)")
    whole_table, saved_under = False, _string_key(sd)
    if isinstance(sd, cst.Subscript) and dotted(sd.value) is not None:
        sd, whole_table = sd.value, True
    model = site.receiver
    if dotted(model) is None:
        raise Unconvertible("load_state_dict on an expression: bind the model to a name", "manual")
    statement = _statement_call(site)
    param = _fresh(site, "param")
    source = _params_of(sd)   # another network's state_dict(): matched by path, as torch's keys are
    if source is not None and not whole_table:
        table = _fresh(site, "state_dict")
        site.before(site.stmt(f"{table} = dict({{src}}.parameters_and_names())  # keyed by path, as torch's\n",
                              src=source))
        sd = cst.parse_expression(table)
    else:
        if not whole_table and not _is_optimizer(site, model) and _prefixes_networks(site):
            # saved from (or into) a network the conversion gave a parameter-name prefix
            func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_prefix_matched")
            sd = cst.Call(func, [cst.Arg(model), cst.Arg(sd)])
        if dotted(sd) is None:   # evaluated once
            table = _fresh(site, "state_dict")
            site.before(site.stmt(f"{table} = {{sd}}\n", sd=sd))
            sd = cst.parse_expression(table)
    target, table = site.code(model), site.code(sd)
    if source is not None and not whole_table:
        path = _fresh(site, "path")
        loop_vars, params, key = f"{path}, {param}", f"{target}.parameters_and_names()", path
    else:
        loop_vars, params, key = param, f"{target}.get_parameters()", f"{param}.name"
    saved_alone = not whole_table and source is None and _is_optimizer(site, model)
    # an optimizer's learning rates are saved beside its parameters (see save): not unexpected
    lrs = f" and not name.startswith({_OPTIMIZER_KEY + '.lr.'!r})" if saved_alone else ""
    missing = f"[{key} for {loop_vars} in {params} if {key} not in {table}]"
    unexpected = f"[name for name in {table} if name not in {{{key} for {loop_vars} in {params}}}{lrs}]"
    if statement and strict and whole_table:
        site.before(site.stmt(f"param_not_load = {missing}\n"))
        site.before(site.stmt(
            f"if param_not_load:  # torch's strict load raises\n"
            f"    raise RuntimeError(f\"{target}: missing in the checkpoint: {{param_not_load}}\")\n"))
    elif strict or not statement:
        site.before(site.stmt(f"param_not_load = {missing}\n"))
        site.before(site.stmt(f"ckpt_not_load = {unexpected}\n"))
        if strict:
            site.before(site.stmt(
                f"if param_not_load or ckpt_not_load:  # torch's strict load raises\n"
                f"    raise RuntimeError(f\"{target}: missing {{param_not_load}}, unexpected {{ckpt_not_load}}\")\n"))
    head = f"for {loop_vars} in {params}:  # in place: set_data would detach it from a compiled step\n"
    body = f"{{assign}}({param}, {table}[{key}])\n"
    if not strict:
        body = f"if {key} in {table}:\n        " + body
    loop = site.stmt(head + "    " + body, assign=site.ref("mindspore.ops.assign"))
    site.before(loop)
    if whole_table and saved_under is not None and _is_optimizer(site, model):   # its lrs (see _save_dict)
        func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_load_optimizer_lrs")
        site.before(site.stmt(f"{func.value}({target}, {table}, {site.code(saved_under)})\n"))
    elif saved_alone:
        func = generated_text(site.rw.imports, "checkpoint_files", "msmigrate_load_optimizer_lrs")
        site.before(site.stmt(f"{func.value}({target}, {table}, {_OPTIMIZER_KEY!r})\n"))
    if statement:
        return site.REMOVED
    return site.expr("(param_not_load, ckpt_not_load)")
