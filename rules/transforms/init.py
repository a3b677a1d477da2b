"""torch.nn.init: in-place initialisation of a parameter -> Parameter.set_data(initializer(...))."""
from __future__ import annotations

import math

import libcst as cst

from msmigrate.engine import Unconvertible, literal_value
from msmigrate.rules.transforms.tensor_methods import attribute_choice


def _tensor(site) -> cst.BaseExpression:
    """The initialised tensor; it is named three times, so it must be a plain reference."""
    t = site.arg("tensor")
    if t is None:
        raise Unconvertible("no tensor argument", "manual")
    if isinstance(t, cst.Attribute) and t.attr.value == "data":
        # `m.weight.data` shares torch's parameter storage; MindSpore's Parameter.data is a copy
        # without set_data: the parameter itself is initialised
        t = t.value
    node = t
    if attribute_choice(node):   # a parameter chosen by the layer's class (layer_attributes)
        return t
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    if not isinstance(node, cst.Name):
        raise Unconvertible(f"{site.code(t)} is not a parameter reference: use "
                            f"initializer(Init, shape, dtype).init_data() to make a new tensor", "manual")
    return t


# torch functions making a plain tensor (not a Parameter)
_FACTORIES = frozenset(f"torch.{n}" for n in (
    "empty", "zeros", "ones", "full", "randn", "rand", "tensor", "Tensor", "FloatTensor", "DoubleTensor", "eye",
    "empty_like", "zeros_like", "ones_like", "full_like", "randn_like", "rand_like"))


def _plain_tensor(site, t: cst.BaseExpression) -> bool:
    """`t` is a name last bound, in straight-line code before the call, to a tensor factory
    (`w = torch.empty(3, 5)`): a MindSpore Tensor, which has no set_data."""
    from msmigrate.rules.transforms.dtypes import _straight_line_value
    if not isinstance(t, cst.Name):
        return False
    value = _straight_line_value(site.rw, t.value)
    return isinstance(value, cst.Call) and (site.rw.scopes.resolve(value.func) or "") in _FACTORIES


def _set(site, init_call: cst.BaseExpression, shift: cst.BaseExpression | None = None):
    t = _tensor(site)
    value = site.expr("{initializer}({init}, {t}.shape, {t}.dtype)",
                      initializer=site.ref("mindspore.common.initializer.initializer"), init=init_call, t=t)
    if shift is not None:  # an initializer Tensor is lazy: materialise it before arithmetic
        value = site.expr("{v}.init_data() + {s}", v=value, s=shift)
    if _plain_tensor(site, t):   # a Tensor is written in place with materialised values
        return site.expr("{t}.assign_value({v})", t=t, v=value if shift is not None else site.expr("{v}.init_data()", v=value))
    return site.expr("{t}.set_data({v})", t=t, v=value)


def set_data(site):
    """nn.init.xavier_uniform_(w, gain=2) -> w.set_data(initializer(XavierUniform(gain=2), w.shape, w.dtype))."""
    init_call = cst.Call(func=site.ref(site.record.target), args=site.standard_args(skip=("tensor",)))
    return _set(site, init_call)


def uniform(site):
    """U(a, b): MindSpore's Uniform(scale) is U(-scale, scale), shifted by the midpoint."""
    a = site.arg("a", cst.Float("0.0"))
    b = site.arg("b", cst.Float("1.0"))
    try:
        lo, hi = float(literal_value(a)), float(literal_value(b))
    except (ValueError, TypeError):
        scale = site.expr("({b} - {a}) / 2", a=a, b=b)
        return _set(site, site.expr("{U}({s})", U=site.ref(site.record.target), s=scale),
                    site.expr("({a} + {b}) / 2", a=a, b=b))
    init_call = site.expr("{U}({s})", U=site.ref(site.record.target), s=cst.parse_expression(repr((hi - lo) / 2)))
    if lo == -hi:
        return _set(site, init_call)
    return _set(site, init_call, cst.parse_expression(repr((hi + lo) / 2)))


_GAINS = {"linear": "1", "conv1d": "1", "conv2d": "1", "conv3d": "1", "conv_transpose1d": "1",
          "conv_transpose2d": "1", "conv_transpose3d": "1", "sigmoid": "1", "tanh": "5.0 / 3",
          "relu": "math.sqrt(2.0)", "selu": "3.0 / 4"}


def calculate_gain(site):
    """torch's recommended gains (MindSpore has no public calculate_gain): the value itself."""
    try:
        name = site.literal("nonlinearity")
        param = site.literal("param", None)
    except ValueError:
        raise Unconvertible("nonlinearity is not a literal", "manual") from None
    if name == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return cst.parse_expression(repr(math.sqrt(2.0 / (1 + slope ** 2))))
    if name not in _GAINS:
        raise Unconvertible(f"nonlinearity {name!r}", "manual")
    code = _GAINS[name]
    if code.startswith("math."):
        return site.expr("{sqrt}(2.0)", sqrt=site.ref("math.sqrt"))
    return cst.parse_expression(code)
