"""torch.nn.functional calls whose mindspore.ops counterpart needs more than renames."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible, atom, kwarg, literal_value
from msmigrate.rules.transforms.torch_functions import generated_function


def _is_none(node) -> bool:
    return node is None or (isinstance(node, cst.Name) and node.value == "None")


def softmax(site):
    """softmax/softmin/log_softmax without `dim`: torch picks 0 for 0-, 1- and 3-D inputs and 1
    otherwise (deprecated implicit dim); MindSpore's default is -1. Spell torch's choice out."""
    if site.has("dim"):
        return site.call(site.record.target)
    x = atom(site.arg("input"))
    args = site.standard_args()
    args.append(kwarg("axis", site.expr("0 if {x}.ndim in (0, 1, 3) else 1", x=x)))
    return site.call(site.record.target, args)


def conv(site):
    """ops.convNd pads nothing unless pad_mode='pad' (its default is 'valid'); torch's
    padding='same'/'valid' strings are MindSpore pad modes. Tuples keep torch's one value per
    dimension (ops.conv2d takes exactly two)."""
    pad = site.arg("padding")
    args = site.standard_args(skip=("padding",))
    if pad is None:
        return site.call(site.record.target, args)
    try:
        value = literal_value(pad)
    except ValueError:
        value = None
    if isinstance(value, str):
        args.append(kwarg("pad_mode", cst.SimpleString(repr(value))))
    elif value == 0:
        pass
    else:
        args += [kwarg("pad_mode", cst.SimpleString("'pad'")), kwarg("padding", pad)]
    return site.call(site.record.target, args)


def avg_pool(site):
    """torch's stride defaults to kernel_size, ops.avg_poolNd's to 1; divisor_override=None is
    MindSpore's 0."""
    skip = tuple(name for name in ("stride", "divisor_override") if _is_none(site.arg(name, cst.Name("None"))))
    args = site.standard_args(skip=skip)
    if "stride" in skip and site.has("kernel_size"):   # without it the call fails in both frameworks
        args.append(kwarg("stride", site.arg("kernel_size")))
    return site.call(site.record.target, args)


def normalize(site):
    """F.normalize(x, p, dim, eps) = x / max(||x||_p over dim, eps); mindspore.ops has no
    normalize, so the formula is written out."""
    if not _is_none(site.arg("out")):
        raise Unconvertible("out= has no MindSpore equivalent")
    x = site.arg("input")
    return site.expr("{xa} / {clamp}({norm}({x}, {p}, {dim}, keepdim=True), min={eps})", xa=atom(x), x=x,
                     clamp="@mindspore.ops.clamp", norm="@mindspore.ops.norm",
                     p=site.arg("p", cst.Float("2.0")), dim=site.arg("dim", cst.Integer("1")),
                     eps=site.arg("eps", cst.Float("1e-12")))


def embedding(site):
    """ops.embedding has no CPU kernel in 2.10; the lookup is a gather of weight rows."""
    for name in ("max_norm",):
        if not _is_none(site.arg(name)):
            raise Unconvertible(f"{name}= (renormalising rows) has no MindSpore equivalent")
    for name in ("scale_grad_by_freq", "sparse"):
        arg = site.arg(name)
        if arg is not None and not (isinstance(arg, cst.Name) and arg.value == "False"):
            raise Unconvertible(f"{name}={site.code(arg)} has no MindSpore equivalent")
    if not _is_none(site.arg("padding_idx")):
        site.flag("review", f"{site.qualname}: padding_idx only zeroes that row's gradient in torch; "
                            f"the gather lets it train")
    return site.expr("{gather}({w}, {i}, 0)", gather="@mindspore.ops.gather", w=site.arg("weight"),
                     i=site.arg("input"))


def one_hot(site):
    """ops.one_hot needs the class count; torch infers it from the data when it is -1 or not
    given (the largest index + 1): written out as `int(y.max()) + 1` for an index tensor that can
    be read twice (MindSpore's graph mode runs that on the host too)."""
    n = site.arg("num_classes")
    try:
        missing = n is None or literal_value(n) == -1
    except ValueError:
        missing = False
    x = site.arg("tensor")
    if missing:
        if not (isinstance(x, (cst.Name, cst.Attribute)) or (isinstance(x, cst.Subscript) and _call_free(x))):
            raise Unconvertible("num_classes=-1 (inferred from the data) of an expression: bind the "
                                "indices to a name, or pass the class count")
        n = site.expr("int({x}.max()) + 1", x=x)
    return site.call(site.record.target, [cst.Arg(x), cst.Arg(n)])


def _call_free(node) -> bool:
    from msmigrate.names import walk
    return not any(isinstance(n, cst.Call) for n in walk(node))


def layer_norm(site):
    """ops.layer_norm (LayerNormExt) has no CPU backward kernel in 2.10; the LayerNorm primitive
    has. It normalises from an axis on and rejects negative axes below -1, so a
    multi-dimensional normalized_shape counts from the input's rank."""
    x, shape = atom(site.arg("input")), site.arg("normalized_shape")
    if isinstance(shape, (cst.Tuple, cst.List)):
        dims = len(shape.elements)
    else:
        try:
            value = literal_value(shape)
            dims = 1 if isinstance(value, int) else len(value)
        except ValueError:
            dims = None
    if dims == 1:
        axis = cst.parse_expression("-1")
    elif dims is not None:
        axis = site.expr("{x}.ndim - " + str(dims), x=x)
    else:
        axis = site.expr("{x}.ndim - len({s})", x=x, s=shape)
    params_shape = shape if isinstance(shape, (cst.Tuple, cst.List)) or dims != 1 else site.expr("({s},)", s=shape)
    weight = site.arg("weight")
    bias = site.arg("bias")
    if _is_none(weight):
        weight = site.expr("{ones}({s}, {x}.dtype)", ones="@mindspore.ops.ones", s=params_shape, x=x)
    if _is_none(bias):
        bias = site.expr("{zeros}({s}, {x}.dtype)", zeros="@mindspore.ops.zeros", s=params_shape, x=x)
    eps = site.arg("eps", cst.Float("1e-05"))
    return site.expr("{LN}(begin_norm_axis={a}, begin_params_axis={a}, epsilon={eps})({x}, {w}, {b})[0]",
                     LN="@mindspore.ops.LayerNorm", a=axis, eps=eps, x=x, w=weight, b=bias)


def scaled_dot_product_attention(site):
    """mindspore.ops has no scaled_dot_product_attention in 2.10: written out as
    softmax(q kᵀ · scale + mask) v. torch's is_causal mask keeps key j <= query i; a bool
    attn_mask marks the positions that take part, a float one is added to the scores; dropout_p
    applies whenever it is non-zero (torch does not look at the training flag here)."""
    q, k, v = site.arg("query"), site.arg("key"), site.arg("value")
    if q is None or k is None or v is None:
        raise Unconvertible("query, key and value must be given")
    if not _is_false(site.arg("enable_gqa")):
        raise Unconvertible("enable_gqa=True (grouped-query attention) is not written out")
    scale = site.arg("scale")
    if _is_none(scale):
        scale = site.expr("{q}.shape[-1] ** -0.5", q=atom(q))
    scores = site.expr("{matmul}({q}, {k}.swapaxes(-2, -1)) * {s}", matmul="@mindspore.ops.matmul",
                       q=q, k=atom(k), s=atom(scale))
    causal = site.arg("is_causal")
    if not _is_false(causal):
        try:
            literal = literal_value(causal)
        except ValueError:
            raise Unconvertible(f"is_causal={site.code(causal)} is not a literal") from None
        if literal:
            scores = site.expr(
                "{fill}({sc}, {triu}({ones}(({q}.shape[-2], {k}.shape[-2]), {f32}), 1).astype({b}), "
                "float('-inf'))", fill="@mindspore.ops.masked_fill", triu="@mindspore.ops.triu",
                ones="@mindspore.ops.ones", f32="@mindspore.float32", b="@mindspore.bool_",
                sc=scores, q=atom(q), k=atom(k))
    mask = site.arg("attn_mask")
    if not _is_none(mask):
        m = atom(mask)
        scores = site.expr("({fill}({sc}, ~{m}, float('-inf')) if {m}.dtype == {b} else {sc} + {m})",
                           fill="@mindspore.ops.masked_fill", b="@mindspore.bool_", sc=scores, m=m)
    weights = site.expr("{softmax}({sc}, axis=-1)", softmax="@mindspore.ops.softmax", sc=scores)
    p = site.arg("dropout_p")
    try:
        no_dropout = p is None or literal_value(p) == 0
    except ValueError:
        no_dropout = False
    if not no_dropout:
        weights = site.expr("{dropout}({w}, p={p})", dropout="@mindspore.ops.dropout", w=weights, p=p)
    return site.expr("{matmul}({w}, {v})", matmul="@mindspore.ops.matmul", w=weights, v=v)


def _is_false(node) -> bool:
    return node is None or (isinstance(node, cst.Name) and node.value == "False")


def first_output(site):
    """MindSpore returns (loss, extra) where torch returns the loss alone (ops.ctc_loss also
    returns log_alpha)."""
    return site.expr("{call}[0]", call=site.call(site.record.target))


def int32_value(value, site):
    """An index tensor the MindSpore kernel accepts only as int32 (torch passes int64)."""
    return site.expr("{v}.astype({i32})", v=atom(value), i32="@mindspore.int32")


def _whole_statement(site) -> bool:
    """The call is an expression statement of its own (`F.relu(x, inplace=True)`)."""
    stmt = site.statement
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call)):
        return False
    return site.rw._pos(stmt.body[0].value) == site.rw.pos_stack[-1]


def _fresh_tensor(node) -> bool:
    """A tensor made by the expression itself, which nothing else reads (`x.copy()`, `a + b`;
    not a view such as `x.view(-1)`, whose writes reach x)."""
    if isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
        and node.func.attr.value in ("copy", "clone") and not node.args


def write_back(site, value):
    """The INPLACE hook (record field `inplace`): torch writes the result into the first argument
    (`F.relu(x, inplace=True)`, `F.relu_(x)`); MindSpore's functions return a new tensor. A whole
    statement becomes `x[...] = value` (ops.assign for an attribute: a Parameter or buffer); where
    the value is used, it is used, and a name other than x receiving it is marked (x itself keeps
    its old values)."""
    from msmigrate.names import dotted
    from msmigrate.rules.transforms.tensor_methods import (_assign_back, _target, _view_bound, _whole_value,
                                                           _writes_through_data)
    flag = site.record.inplace
    if flag != "always":
        if not site.has(flag):
            return value
        try:
            on = literal_value(site.arg(flag))
        except ValueError:
            on = None
        if on is False:
            return value
    first = site.uncast.get(site.record.args[0], site.arg(site.record.args[0]))   # x, not x.astype(...)
    if first is None:
        return value
    target = _target(first)
    if flag != "always" and on is not True:
        # inplace=self.inplace, known at run time only: a whole statement writes x when it is
        # true (and does nothing otherwise, as torch's discarded result does)
        if _whole_statement(site) and isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
            if isinstance(target, cst.Attribute) or _writes_through_data(first):
                write = site.stmt("{f}({t}, {v})\n", f=site.ref("mindspore.ops.assign"), t=target, v=value)
            else:
                lhs = target if isinstance(target, cst.Subscript) else site.expr(
                    "{t}[:]" if _view_bound(site, target) else "{t}[...]", t=target)
                write = site.stmt("{l} = {v}\n", l=lhs, v=value)
            site.before(cst.If(test=site.arg(flag), body=cst.IndentedBlock([write])))
            return site.REMOVED
        return value
    if _whole_statement(site) and isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
        return _assign_back(site, target, value, parameter=_writes_through_data(first))
    if _whole_statement(site):
        raise Unconvertible("an in-place call on an expression: nothing to write back to", "review")
    if _whole_value(site) and isinstance(target, (cst.Name, cst.Subscript)) and not _writes_through_data(first):
        # `y = F.relu_(x)`, `return torch.relu_(x)`: x is written first, then read as the value
        _assign_back(site, target, value)
        return target
    if _fresh_tensor(target):
        return value    # torch writes a temporary nobody else reads: the same values
    if site.assigned_name is None or site.assigned_name != dotted(target):
        site.flag("review", f"{site.qualname}: computed out of place; {site.code(target)} itself is "
                            f"not modified (torch writes it in place)")
    return value


def out_target(site):
    """`torch.add(a, b, out=o)` as a statement: the tensor `o` the result is written into, taken
    off the call's arguments (MindSpore has no out=); None where the call's value is used or `o`
    is not a tensor expression (a tuple of outputs): then out= stays and is marked."""
    arg = site.bound.get("out")
    if arg is None or _is_none(arg.value) or "out" not in site.record.args or site.receiver is not None:
        return None
    if not isinstance(arg.value, (cst.Name, cst.Attribute, cst.Subscript)) or not _whole_statement(site):
        return None
    del site.bound["out"]
    return arg.value


def write_out(site, target, value):
    """The converted call's value as torch's out= tensor: a name is bound to it in the name's
    dtype (`o = ops.add(a, b).astype(o.dtype)`: torch resizes `o` to the result and casts into
    its dtype); an element or attribute is written (`x[0][...] = ...`, ops.assign)."""
    from msmigrate.rules.transforms.tensor_methods import (_assign_back, _replace_statement, _target,
                                                           _writes_through_data)
    if isinstance(target, cst.Name):
        cast = site.expr("{v}.astype({t}.dtype)", v=atom(value, attribute=True), t=target)
        return _replace_statement(site, cst.SimpleStatementLine([cst.Assign(
            targets=[cst.AssignTarget(target)], value=cast)]))
    return _assign_back(site, _target(target), value, parameter=_writes_through_data(target))


def _pair1(site, node, default: str) -> cst.BaseExpression:
    """A 1-D pooling size (int or 1-tuple) as the 2-D (first, size) MindSpore pools over (1, L)."""
    first = "0" if default == "0" else "1"
    if node is None or _is_none(node):
        return cst.parse_expression(f"({first}, {default})")
    if isinstance(node, (cst.Tuple, cst.List)) and len(node.elements) == 1:
        node = node.elements[0].value
    return site.expr("(" + first + ", {v})", v=node)


def max_pool1d(site):
    """ops has no max_pool1d: ops.max_pool2d over the input viewed as (N, C, 1, L) with a (1, k)
    window, viewed back (a 2-D (C, L) input too); indices along L are the same numbers."""
    if not site.is_call:
        raise Unconvertible("used as a value: only calls are converted", "review")
    x = site.arg("input")
    if x is None or site.arg("kernel_size") is None:
        raise Unconvertible("missing input or kernel_size", "review")
    if not isinstance(x, (cst.Name, cst.Attribute, cst.Subscript)):
        raise Unconvertible("the input is an expression: assign it to a name first", "review")
    kernel = _pair1(site, site.arg("kernel_size"), "1")
    stride = kernel if _is_none(site.arg("stride")) or (isinstance(site.arg("stride"), (cst.List, cst.Tuple))
                                                        and not site.arg("stride").elements) \
        else _pair1(site, site.arg("stride"), "1")
    indices = site.record.torch.endswith("_with_indices")
    if site.has("return_indices"):
        try:
            indices = indices or literal_value(site.arg("return_indices")) is True
        except ValueError:
            raise Unconvertible("return_indices is not a literal", "review") from None
    call = site.expr("{f}({x}.reshape((-1, {x}.shape[-2], 1, {x}.shape[-1])), {k}, {s}, {p}, {d}, "
                     "ceil_mode={c}, return_indices={r})", f="@mindspore.ops.max_pool2d", x=x, k=kernel, s=stride,
                     p=_pair1(site, site.arg("padding"), "0"), d=_pair1(site, site.arg("dilation"), "1"),
                     c=site.arg("ceil_mode", cst.Name("False")), r=cst.Name("True" if indices else "False"))
    if indices:
        return site.expr("{f}(*{c}, {x}.shape[:-1] + (-1,))", f=generated_function(site, "msmigrate_reshape_pair"),
                         x=x, c=call)
    return site.expr("{c}.reshape({x}.shape[:-1] + (-1,))", c=call, x=x)


def single_int(value, site):
    """A one-element tuple or list literal -> its element: ops.avg_pool1d takes ints only, torch
    also `(2,)`."""
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == 1:
        return value.elements[0].value
    return value


# torch names whose conversion is another name's generated function (rules/generated/functions.py):
# in-place forms written back by the record's `inplace`, ATen's forms returning torch.nn.functional's
# (values, indices)
_GENERATED_AS = {
    "torch.alpha_dropout_": "msmigrate_alpha_dropout",
    "torch.feature_alpha_dropout_": "msmigrate_feature_alpha_dropout",
    "torch.adaptive_max_pool1d": "msmigrate_adaptive_max_pool1d_with_indices",
    "torch.nn.functional.fractional_max_pool2d_with_indices": "msmigrate_fractional_max_pool2d",
    "torch.nn.functional.fractional_max_pool3d_with_indices": "msmigrate_fractional_max_pool3d",
}


def generated_as(site):
    """The generated function _GENERATED_AS names for this API, copied into the file and called
    with torch's arguments under torch's names (as torch_functions.generated)."""
    from msmigrate.rules.transforms.torch_functions import call_generated
    return call_generated(site, _GENERATED_AS[site.record.torch])
