"""torch.nn layers whose MindSpore Cell takes differently shaped arguments."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible, kwarg, literal_value


def layer_norm(site):
    """MindSpore's LayerNorm normalises from `begin_norm_axis` on, default -1, and rejects
    negative axes below -1: a multi-dimensional normalized_shape needs the positive axis,
    which depends on the input's rank (assumed here: one leading batch axis)."""
    args = site.standard_args()
    try:
        shape = site.literal("normalized_shape")
    except ValueError:
        shape = None
    if isinstance(shape, (list, tuple)) and len(shape) > 1:
        site.flag("review", f"{site.qualname}: normalized_shape has {len(shape)} dims: "
                            f"begin_norm_axis=1 assumes the input is (batch, *normalized_shape); "
                            f"MindSpore needs input.ndim - {len(shape)} here")
        args += [kwarg("begin_norm_axis", cst.Integer("1")), kwarg("begin_params_axis", cst.Integer("1"))]
    return site.call(site.record.target, args)


def local_response_norm(site):
    """torch: a / (k + alpha/size * sum over `size` channels of a^2)^beta; MindSpore's LRN sums
    over 2*depth_radius+1 channels without dividing alpha by the window size."""
    try:
        size = site.literal("size")
    except ValueError:
        size = None
    if not isinstance(size, int) or size % 2 == 0:
        raise Unconvertible("only an odd literal size maps onto LRN's symmetric depth_radius")
    alpha = site.arg("alpha", cst.Float("0.0001"))
    try:
        alpha_value = cst.parse_expression(repr(float(literal_value(alpha)) / size))
    except ValueError:
        alpha_value = site.expr("{a} / " + str(size), a=alpha)
    args = [kwarg("depth_radius", cst.Integer(str((size - 1) // 2))),
            kwarg("bias", site.arg("k", cst.Float("1.0"))),
            kwarg("alpha", alpha_value),
            kwarg("beta", site.arg("beta", cst.Float("0.75")))]
    return site.call(site.record.target, args)


def upsample(site):
    """MindSpore's interpolation rejects scale_factor unless recompute_scale_factor=True; that
    is torch's result whenever the scale gives whole output sizes (integer scales)."""
    try:
        mode = site.literal("mode")
    except ValueError:
        mode = None
    if mode == "bicubic":
        raise Unconvertible("mode='bicubic': MindSpore's bicubic kernel gives different values "
                            "(max error 0.24 on unit-normal input, measured)", "manual")
    args = site.standard_args()
    if not site.has("scale_factor"):
        return site.call(site.record.target, args)
    try:
        scale = site.literal("scale_factor")
    except ValueError:
        scale = None
    if not site.has("recompute_scale_factor"):
        scales = scale if isinstance(scale, (list, tuple)) else [scale]
        if not all(isinstance(s, (int, float)) and float(s).is_integer() for s in scales):
            site.flag("review", f"{site.qualname}: scale_factor={site.code(site.arg('scale_factor'))}: "
                                f"MindSpore recomputes the scale from the output size (torch "
                                f"interpolates with the given scale); equal for integer scales")
        args.append(kwarg("recompute_scale_factor", cst.Name("True")))
    if isinstance(scale, int) or (isinstance(scale, (list, tuple)) and any(isinstance(s, int) for s in scale)):
        # MindSpore type-checks for float, each element of a tuple too
        floats = cst.Float(f"{scale}.0") if isinstance(scale, int) else \
            cst.parse_expression(repr(tuple(float(s) for s in scale)))
        args = [kwarg("scale_factor", floats, a)
                if a.keyword is not None and a.keyword.value == "scale_factor" else a for a in args]
    return site.call(site.record.target, args)


def _assigns_this_call(site) -> bool:
    """`name = <the call>` itself, not `out = <the call>(x)` (a layer made and used at once)."""
    from msmigrate.names import dotted
    value = site.statement.body[0].value
    return isinstance(value, cst.Call) and (dotted(value.func) or "").endswith(site.qualname.rsplit(".", 1)[-1])


def embedding_from_pretrained(site):
    """`nn.Embedding.from_pretrained(w, freeze, padding_idx)` -> an Embedding whose table is w.
    torch freezes the table by default; a Cell's parameters train unless told otherwise."""
    w = site.arg("embeddings")
    if w is None:
        raise Unconvertible("the embeddings argument is missing")
    for name in ("max_norm",):
        if site.arg(name) is not None and not (isinstance(site.arg(name), cst.Name) and site.arg(name).value == "None"):
            raise Unconvertible(f"{name}= has no MindSpore equivalent")
    for name in ("scale_grad_by_freq", "sparse"):
        arg = site.arg(name)
        if arg is not None and not (isinstance(arg, cst.Name) and arg.value == "False"):
            raise Unconvertible(f"{name}={site.code(arg)} has no MindSpore equivalent")
    wa = w if isinstance(w, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) else \
        w.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    args = [cst.Arg(site.expr("{w}.shape[0]", w=wa)), cst.Arg(site.expr("{w}.shape[1]", w=wa)),
            kwarg("embedding_table", w)]
    freeze = site.arg("freeze", cst.Name("True"))
    if not (isinstance(freeze, cst.Name) and freeze.value == "False"):
        # torch does not train a frozen table: neither do trainable_params() and the optimizer
        frozen = "False" if isinstance(freeze, cst.Name) and freeze.value == "True" else \
            f"not {site.code(freeze)}" if isinstance(freeze, (cst.Name, cst.Attribute)) else f"not ({site.code(freeze)})"
        if site.assigned_name is not None and _assigns_this_call(site):
            site.after(f"{site.assigned_name}.embedding_table.requires_grad = {frozen}\n")
        else:
            site.flag("review", f"{site.qualname}: freeze={site.code(freeze)}: torch does not train this table; "
                                f"set <embedding>.embedding_table.requires_grad = False")
    padding_idx = site.arg("padding_idx")
    if padding_idx is not None and not (isinstance(padding_idx, cst.Name) and padding_idx.value == "None"):
        site.flag("review", f"{site.qualname}: padding_idx: MindSpore zeroes that row of the given table "
                            f"(torch keeps it) and still trains it")
        args.append(kwarg("padding_idx", padding_idx))
    return site.call(site.record.target, args)


def square_subsequent_mask(site):
    """Transformer.generate_square_subsequent_mask(sz): -inf above the diagonal, 0 elsewhere
    (MindSpore's Transformer has no such helper in 2.10)."""
    sz = site.arg("sz")
    if sz is None:
        raise Unconvertible("sz is missing")
    # dtype given: ops.full makes a float fill value int64 without it (an attention mask must be float)
    dtype = site.arg("dtype")
    if dtype is None or (isinstance(dtype, cst.Name) and dtype.value == "None"):
        dtype = "@mindspore.float32"
    return site.expr("{triu}({full}(({n}, {n}), float('-inf'), dtype={dtype}), 1)", triu="@mindspore.ops.triu",
                     full="@mindspore.ops.full", n=sz, dtype=dtype)


# torch's channel dropout, for every input rank it accepts, as MindSpore's (4-D / 5-D only) input:
# Dropout2d zeroes whole (N, C) slices at any rank >= 2 (2-D input: single elements); Dropout3d
# treats input below 5-D as unbatched (C, ...) and zeroes whole C slices. The input is viewed with
# the same mask axes and given back its shape.
_CHANNEL_VIEWS = {
    "2d": "{x}.reshape({x}.shape[0], {x}.shape[1], -1, 1)",
    "3d": "({x}.reshape({x}.shape[0], {x}.shape[1], -1, 1, 1) if {x}.ndim == 5 "
          "else {x}.reshape(1, {x}.shape[0], -1, 1, 1))",
}


def channel_view(site, x: cst.BaseExpression):
    """`x` viewed for MindSpore's dropout2d/dropout3d (see _CHANNEL_VIEWS); None (and a marker)
    when `x` is an expression that would be evaluated several times."""
    rank = "3d" if site.qualname.lower().endswith("3d") else "2d"
    if not isinstance(x, (cst.Name, cst.Attribute)):
        site.flag("review", f"{site.qualname}: MindSpore's needs {'5' if rank == '3d' else '4'}-D input "
                            f"(torch's takes other ranks too): name the input (`h = ...`) and convert "
                            f"again, or make sure of its rank")
        return None
    return site.expr(_CHANNEL_VIEWS[rank], x=x)


def channel_dropout_call(site):
    """`drop(x)` on a Dropout2d/Dropout3d object: applied to the channel view of x (an input
    other than a name is left as it is and marked: a lambda evaluating it once would not compile
    in a Cell's construct). A layer made and called in one expression is in training mode, as
    torch's (a Cell starts in eval mode)."""
    args = site.node.args
    if len(args) != 1 or args[0].keyword is not None or args[0].star:
        return site.node
    func = site.node.func
    if isinstance(func, cst.Call):
        func = site.expr("{c}.set_train(True)", c=func)
    x = args[0].value
    view = channel_view(site, x)
    if view is None:
        return site.node.with_changes(func=func)
    return site.expr("{f}({v}).reshape({x}.shape)", f=func, v=view, x=x)


def unbatched_call(site):
    """`conv(x)` of a Conv or ConvTranspose layer, x visibly unbatched ((C, H, W) for Conv2d):
    torch takes it, MindSpore's Cells need the batch dim: `conv(x[None])[0]`."""
    from msmigrate.rules.transforms.dtypes import shape
    args, original = site.node.args, site.rw.original_call
    if len(args) != 1 or args[0].keyword is not None or args[0].star or original is None:
        return site.node
    found = shape(site.rw, original.args[0].value)
    rank = int(re.search(r"(\d)d$", site.record.torch).group(1)) + 2
    if found is None or len(found) != rank - 1:
        return site.node
    return site.expr("{f}({x}[None])[0]", f=site.node.func, x=args[0].value)


def attention_call(site):
    """`attn(q, k, v, ...)` of a MultiheadAttention: torch's `is_causal=` is a hint that
    attn_mask is causal (torch requires the mask with it), MindSpore's call has no such argument:
    dropped where a mask is given. With `need_weights=False` torch returns (output, None),
    MindSpore a 1-tuple: `out, _ = attn(...)` unpacks torch's pair again."""
    args = list(site.node.args)
    keywords = {a.keyword.value: a for a in args if a.keyword is not None}
    if any(a.star for a in args):
        return site.node
    if "is_causal" in keywords:
        causal = keywords["is_causal"]
        mask = "attn_mask" in keywords or len([a for a in args if a.keyword is None]) >= 6
        if not mask and not (isinstance(causal.value, cst.Name) and causal.value.value == "False"):
            raise Unconvertible("is_causal without attn_mask (torch requires the mask it hints at)", "review")
        args = [a for a in args if a is not causal]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    call = site.node.with_changes(args=args)
    weights = keywords.get("need_weights")
    if weights is not None and isinstance(weights.value, cst.Name) and weights.value.value == "False":
        return site.expr("({c}[0], None)", c=call)
    return call


def channel_dropout(site):
    """F.dropout2d/F.dropout3d(x, p, training): on the channel view of x."""
    call = site.call(site.record.target)
    x = site.arg("input")
    view = channel_view(site, x) if x is not None else None
    if view is None:
        return call
    args = list(call.args)
    args[0] = args[0].with_changes(value=view)
    return site.expr("{c}.reshape({x}.shape)", c=call.with_changes(args=args), x=x)


# ---- torch.nn.utils ------------------------------------------------------------------------

def parameters_to_vector(site):
    """nn.utils.parameters_to_vector(params): the parameters flattened and concatenated."""
    params = site.arg("parameters")
    if params is None:
        raise Unconvertible("parameters is missing")
    return site.expr("{cat}([_p.reshape(-1) for _p in {ps}])", cat="@mindspore.ops.cat", ps=params)


def pad_sequence(site):
    """nn.utils.rnn.pad_sequence(seqs, batch_first, padding_value, padding_side): every sequence
    (L_i, *) padded at its end (or start: padding_side='left') along axis 0 to the longest (ops.pad
    pads the last axes first: (0, 0) pairs for the trailing axes), then stacked along axis 1 (T, B, *) or 0 with batch_first (B, T, *).
    A sequences argument other than a name is evaluated once, by a generated function."""
    from msmigrate.rules.transforms.common import repeatable
    seqs = site.arg("sequences")
    if seqs is None:
        raise Unconvertible("sequences is missing")
    first, value = site.arg("batch_first"), site.arg("padding_value")
    try:
        axis = cst.Integer("0" if literal_value(first) else "1") if first is not None else cst.Integer("1")
    except ValueError:
        axis = site.expr("(0 if {b} else 1)", b=first)
    side = site.arg("padding_side")
    try:
        left = side is not None and literal_value(side) == "left"
    except ValueError:
        raise Unconvertible("padding_side known only at run time: write the padding out", "review") from None
    extra = "(max(_t.shape[0] for _t in {seqs}) - _s.shape[0], 0)" if left else \
        "(0, max(_t.shape[0] for _t in {seqs}) - _s.shape[0])"
    pad = ("{stack}([{pad}(_s, (0, 0) * (_s.ndim - 1) + " + extra
           + (", value={value}" if value is not None else "") + ") for _s in {seqs}], {axis})")
    nodes = dict(stack="@mindspore.ops.stack", pad="@mindspore.ops.pad", axis=axis)
    if value is not None:
        nodes["value"] = value
    if repeatable(seqs):
        return site.expr(pad, seqs=seqs, **nodes)
    from msmigrate.rules.transforms.torch_functions import generated_function
    return site.expr("{f}({seqs}, {axis}" + (", {value}" if value is not None else ", None") + (", True)" if left else ")"),
                     f=generated_function(site, "msmigrate_pad_sequence"), seqs=seqs, axis=axis,
                     **({"value": value} if value is not None else {}))


def unpool_call(site):
    """`unpool(x, indices, output_size)`: MindSpore's MaxUnpool raises unless output_size is a
    tuple (torch takes a list or torch.Size too)."""
    args = list(site.node.args)
    if any(a.star for a in args):
        return site.node
    for n, a in enumerate(args):
        if (a.keyword is None and n == 2) or (a.keyword is not None and a.keyword.value == "output_size"):
            v = a.value
            if isinstance(v, cst.Tuple) or (isinstance(v, cst.Name) and v.value == "None"):
                return site.node
            if isinstance(v, cst.List):
                v = cst.Tuple(v.elements if v.elements else [], lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                if len(v.elements) == 1:
                    v = v.with_changes(elements=[v.elements[0].with_changes(comma=cst.Comma())])
            else:
                v = site.expr("tuple({v})", v=v)
            args[n] = a.with_changes(value=v)
            return site.node.with_changes(args=args)
    return site.node


def constant_pad(site):
    """ConstantPad*/ZeroPad*: MindSpore's constant padding with a negative (cropping) amount
    gives wrong values, which change from run to run (measured on CPU): marked."""
    pad = site.arg("padding")
    try:
        value = literal_value(pad) if pad is not None else 0
    except ValueError:
        value = 0
    values = value if isinstance(value, (list, tuple)) else [value]
    if any(isinstance(v, (int, float)) and v < 0 for v in values):
        site.flag("review", f"{site.qualname}: padding={site.code(pad)}: MindSpore's constant padding gives "
                            f"wrong values for a negative (cropping) amount; slice the input instead")
    return site.call(site.record.target)


# torch's Transformer* forward keywords that MindSpore's construct names differently or lacks
_MASK_KEYWORD = {"torch.nn.TransformerEncoder": {"mask": "src_mask"}}
_CAUSAL_HINTS = ("is_causal", "src_is_causal", "tgt_is_causal", "memory_is_causal")


def transformer_call(site):
    """`enc(src, mask=m)`: MindSpore's TransformerEncoder calls it src_mask; torch's is_causal
    hints (the mask, which torch then requires, already says it) are dropped."""
    names = _MASK_KEYWORD.get(site.record.torch, {})
    args = []
    for a in site.node.args:
        key = a.keyword.value if a.keyword is not None else None
        if key in _CAUSAL_HINTS:
            continue
        if key in names:
            a = a.with_changes(keyword=cst.Name(names[key]))
        args.append(a)
    if args and len(args) != len(site.node.args):
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return site.node.with_changes(args=args)


def parameter_list(site):
    """nn.ParameterList(values) assigned to an attribute or a name: msmigrate_parameter_list, a
    ParameterTuple with torch's parameter names. A ParameterTuple is immutable: a list the file
    appends to, extends or assigns into is left for manual work."""
    import re

    from msmigrate.rules.transforms.torch_functions import generated_function
    name = site.assigned_name
    if name is None:
        raise Unconvertible("a ParameterList not assigned to one attribute: keep its Parameters in a "
                            "ms.ParameterTuple attribute (a Cell registers those)", "manual")
    leaf = name.rsplit(".", 1)[-1]
    if re.search(rf"\b{re.escape(leaf)}\s*(\.(append|extend|insert)\(|\[[^\]]*\]\s*=[^=]|\+=)", site.rw.ctx.source):
        raise Unconvertible(f"{name} is changed after it is made; MindSpore's ParameterTuple is immutable: "
                            f"build the full list first, then ms.ParameterTuple(...) with unique names", "manual")
    if re.search(r"for\s+\w+\s+in\s+(list\()?[\w.]+\.parameters\(\)|list\([\w.]+\.parameters\(\)\)\s*\[",
                 site.rw.ctx.source):
        site.flag("review", f"{name}: a ParameterTuple's Parameters are its Cell's own, so parameters() lists "
                            f"them before the Cell's layers (torch: where the ParameterList was registered); "
                            f"code relying on that order (an initialisation drawn in order, a slice of the "
                            f"list) sees other parameters")
    values = site.arg("values")
    func = generated_function(site, "msmigrate_parameter_list")
    return site.expr("{f}({v}, {n})", f=func, v=values if values is not None else cst.Name("None"),
                     n=cst.SimpleString(repr(leaf)))
