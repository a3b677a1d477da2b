"""Casts before MindSpore's float-only kernels (record field `promote`, rules/transforms/dtypes.py):
only where the argument is visibly an integer/bool tensor in the source; ordinary float code and
arguments of unknown dtype convert without one (top-level code checks an unknown one when it
runs: msmigrate_float). The run-time results are checked against torch by the per-API suite
(tests/api_suite/cases/pointwise.toml: torch.sin(torch.arange(5)), ...; suite.inline_cases)."""
from __future__ import annotations

import re

import pytest

from msmigrate import convert_source

HEAD = "import numpy as np\nimport torch\nimport torch.nn as nn\n"
CAST = ".astype(ms.float32)"
# the generated run-time checks (their own code casts): left out of the converted text compared
CHECKS = re.compile(r"\ndef msmigrate_(float|kernel_\w+|empty_result)\(.*?\n(?=\S)", re.S)


def body(code: str) -> str:
    return CHECKS.sub("\n", convert_source(HEAD + code, "t.py").code)


@pytest.mark.parametrize("code, checked", [
    ("x = load()\ny = torch.exp(x)\n", "y = ops.exp(msmigrate_float(x))"),
    ("for x in batches:\n    y = x.sigmoid()\n", "y = ops.sigmoid(msmigrate_float(x))"),
    ("n = load()\ny = torch.ceil(n)\n",
     "y = msmigrate_kernel_output(ops.ceil(msmigrate_kernel_input(n, int_as=ms.float64)), n, int_as=ms.float64)"),
])
def test_unknown_dtype_at_top_level_is_checked_when_it_runs(code, checked):
    out = body(code)
    assert checked in out and CAST not in out
    inside = body("def f(x, n):\n" + "".join("    " + line + "\n" for line in code.splitlines()))
    assert "msmigrate_" not in inside and CAST not in inside   # function bodies: the plain call


@pytest.mark.parametrize("code", [
    "y = torch.sin(torch.arange(5))\n",
    "x = torch.tensor([1, 2, 3])\ny = torch.exp(x)\n",
    "y = torch.sigmoid(t.long())\n",
    "y = torch.tanh(a > b)\n",
    "y = torch.cos(torch.zeros(3, dtype=torch.long))\n",
    "y = torch.log(torch.randint(1, 5, (3,)))\n",
    "def f(a):\n    m = a > 0\n    return torch.exp(m)\n",
    "k = torch.arange(4) * 2\ny = torch.log1p(k)\n",
    "y = torch.sqrt(torch.tensor(4)).long() + torch.rsqrt(torch.tensor([1, 4]))\n",
    # kinds carried through joins, reductions, attributes, numpy arrays and range lists
    "y = torch.exp(torch.cat([torch.arange(2), torch.tensor([5])]))\n",
    "y = torch.exp(torch.tensor([True, False]).sum())\n",
    "y = torch.exp(torch.tensor([[1, 2]]).T)\n",
    "y = torch.exp(torch.multinomial(torch.ones(4), 2))\n",
    "y = torch.exp(torch.randn(3).argmax())\n",
    "y = torch.exp(torch.from_numpy(np.arange(4)))\n",
    "y = torch.exp(torch.tensor(list(range(4))))\n",
    "y = torch.exp(torch.tensor([v for v in range(4)]))\n",
    "y = torch.exp(torch.where(c, torch.tensor([1]), torch.tensor([2])))\n",
    "y = torch.exp(torch.randn(3).gt(0))\n",
])
def test_visible_integer_or_bool_gets_a_cast(code):
    assert CAST in body(code)


@pytest.mark.parametrize("code", [
    "def f(x):\n    return torch.sigmoid(x)\n",                         # a parameter: unknown
    "y = torch.exp(torch.randn(3))\n",                                  # float
    "y = torch.sin(torch.arange(0.0, 1.0, 0.1))\n",                    # float arange
    "x = torch.arange(5)\nx = x * 0.5\ny = torch.exp(x)\n",             # bound twice, not alike
    "for x in batches:\n    y = torch.exp(x)\n",                        # a loop variable
    "x = torch.arange(5)\nx += 1.5\ny = torch.exp(x)\n",                # augmented: unknown
    "net = nn.Linear(3, 2)\npred = net(inp)\ny = torch.sigmoid(pred)\n",   # a layer's output
    "y = torch.exp(torch.tensor([1.0, 2.0]))\n",
    "y = torch.abs(torch.arange(5))\n",                                 # abs keeps integers in torch
    "y = torch.exp(torch.randn(3, 4).max(1)[1])\n",                      # (values, indices): not guessed
    "y = torch.exp(torch.tensor([1, 2]).sum(dtype=torch.float32))\n",
    "y = torch.exp(torch.bincount(k, weights=w))\n",
])
def test_float_or_unknown_gets_none(code):
    assert CAST not in body(code)


def test_name_bound_in_an_enclosing_function_scope_only():
    code = ("x = torch.arange(3)\n"
            "def f(x):\n    return torch.exp(x)\n"      # the parameter shadows the module's x
            "def g():\n    return torch.exp(x)\n")      # the module's x: visibly int
    out = body(code)
    assert out.count(CAST) == 1 and "return ops.exp(x.astype(ms.float32))" in out.split("def g")[1]


def test_invert_follows_the_visible_dtype():
    out = body("k = torch.arange(5)\nm = k > 2\ny = ~k\nz = ~m\n")
    assert "y = ops.invert(k)" in out and "z = ~m" in out and "msmigrate:" not in out
    marked = convert_source(HEAD + "def f(v):\n    return ~v\n", "t.py")
    assert any("logical_not" in d.message for d in marked.diagnostics)


@pytest.mark.parametrize("code", [
    "x = torch.tensor([1, 2, 3])\ny = torch.exp(x)\nx = x.float()\n",            # rebound after the call
    "x = torch.randn(3)\nx = torch.arange(3)\ny = torch.exp(x)\n",               # the last binding decides
    "def f(a):\n    k = torch.arange(4)\n    if a:\n        return torch.sin(k)\n    k = a\n",
    "k = torch.arange(4)\nwith ctx:\n    y = torch.sin(k)\nk = k * 0.5\n",
])
def test_last_straight_line_binding_decides(code):
    assert CAST in body(code)


@pytest.mark.parametrize("code", [
    "x = torch.tensor([1, 2, 3])\nx = x.float()\ny = torch.exp(x)\n",            # last binding float
    "k = torch.arange(4)\nfor _ in range(3):\n    y = torch.cos(k)\n    k = k * 0.5\n",   # loop flows back
    "k = torch.arange(4)\nif c:\n    k = k * 0.5\ny = torch.exp(k)\n",           # a branch rebinds it
    "k = torch.arange(4)\ntry:\n    k = k * 0.5\nexcept E:\n    y = torch.exp(k)\n",   # the try body may have run
    "k = torch.arange(4)\nwhile torch.exp(k).sum() > 1:\n    k = k * 0.5\n",  # rebound in the loop of its test
    "k = torch.arange(4)\ndef f():\n    global k\n    k = k * 0.5\nf()\ny = torch.exp(k)\n",
])
def test_rebinding_on_the_way_to_the_call_gets_none(code):
    assert CAST not in body(code)


@pytest.mark.parametrize("code,expected", [
    ("y = torch.arange(5).sin()\n", "y = ops.sin(ops.arange(5).astype(ms.float32))"),
    ("k = torch.tensor([1, 2])\ny = k.exp()\n", "y = ops.exp(k.astype(ms.float32))"),
    ("y = (a > b).sigmoid()\n", "y = ops.sigmoid((a > b).astype(ms.float32))"),
    ("y = torch.arange(3).atan2(torch.arange(3))\n",
     "y = ops.atan2(ops.arange(3).astype(ms.float32), ops.arange(3).astype(ms.float32))"),
])
def test_method_on_a_visibly_integer_tensor_converts_as_the_function(code, expected):
    assert expected in body(code)


@pytest.mark.parametrize("code,kept", [
    ("def f(x):\n    return x.sin()\n", "return x.sin()"),                  # unknown: method kept
    ("y = torch.randn(3).exp()\n", "y = ops.randn(3).exp()"),
    ("y = torch.arange(0.0, 1.0, 0.1).cos()\n", "y = ops.arange(0.0, 1.0, 0.1).cos()"),
])
def test_method_on_float_or_unknown_stays(code, kept):
    out = body(code)
    assert kept in out and CAST not in out


@pytest.mark.parametrize("code", [
    "y = torch.logsumexp(torch.arange(6).reshape(2, 3), 1)\n",     # a reshape keeps the dtype
    "y = torch.exp(torch.arange(6)[1:])\n",                         # so does indexing
    "y = torch.isinf(torch.tensor([1, 2]))\n",
    "y = torch.count_nonzero(a > 0, dim=1)\n",
])
def test_dtype_kept_through_reshapes_and_more_float_only_records(code):
    assert CAST in body(code)


def test_view_as_another_dtype_is_that_dtype():
    assert CAST not in body("y = torch.exp(torch.arange(4).view(torch.float32))\n")
    assert CAST in body("y = torch.exp(torch.randn(4).view(torch.int32))\n")


@pytest.mark.parametrize("code,cast", [
    ("n = 5\ny = torch.exp(torch.tensor(n))\n", True),               # a name holding a Python int
    ("y = torch.exp(torch.arange(x.size(1)))\n", True),
    ("y = torch.exp(torch.arange(len(xs)))\n", True),
    ("y = torch.exp(torch.tensor([x.shape[0], 2]))\n", True),
    ("n = 5.0\ny = torch.exp(torch.tensor(n))\n", False),            # a Python float
    ("def f(n):\n    return torch.exp(torch.arange(n))\n", False),   # a parameter: unknown
])
def test_python_ints_held_in_names_and_sizes(code, cast):
    assert (CAST in body(code)) is cast


@pytest.mark.parametrize("code, expected", [
    # a kind MindSpore's kernel lacks (record field `compute_as`): computed in the dtype given,
    # the result cast back to the argument's own dtype (read at run time from a name)
    ("b = torch.tensor([True, False])\ny = torch.amax(b)\n", "ops.amax(b.astype(ms.int32)).astype(b.dtype)"),
    ("b = torch.tensor([True, False])\ny = b.sign()\n", "ops.sign(b.astype(ms.int32)).astype(b.dtype)"),
    ("k = torch.tensor([1, 2])\ny = torch.floor(k + 1)\n", "ops.floor((k + 1).astype(ms.float64)).astype(ms.int64)"),
    ("x = torch.ones(2).double()\ny = nn.functional.relu6(x * 2)\n",
     "ops.relu6((x * 2).astype(ms.float32)).astype(ms.float64)"),
    # the in-place form writes back into the tensor itself, not into its cast
    ("x = torch.ones(2, dtype=torch.float64)\nnn.functional.relu6(x, inplace=True)\n",
     "x[...] = ops.relu6(x.astype(ms.float32)).astype(x.dtype)"),
])
def test_kinds_without_a_kernel_are_computed_in_another_dtype(code, expected):
    assert expected in body(code)


@pytest.mark.parametrize("code", [
    "def f(b):\n    return torch.amax(b)\n",                      # unknown dtype
    "y = torch.amax(torch.randn(3))\n",                             # float: has a kernel
    "k = torch.arange(4)\ny = torch.floor(k / 2)\n",               # int / int is float in torch
    "x = torch.ones(2).double()\ny = nn.functional.relu6(x * torch.ones(2))\n",   # float64 * float32: unknown
])
def test_kinds_with_a_kernel_or_unknown_are_not_cast(code):
    assert ".astype(" not in body(code)


@pytest.mark.parametrize("code", [
    "k = torch.arange(4)\ny = torch.exp(torch.zeros_like(k))\n",      # *_like keeps the dtype
    "k = torch.tensor([1, 2])\ny = torch.sin(torch.flatten(k))\n",
    "b = torch.tensor([True])\ny = torch.exp(torch.clone(b))\n",
])
def test_functions_keeping_their_input_dtype_keep_its_kind(code):
    assert CAST in body(code)


def test_like_functions_with_a_dtype_follow_it():
    assert CAST not in body("k = torch.arange(4)\ny = torch.exp(torch.zeros_like(k, dtype=torch.float32))\n")


@pytest.mark.parametrize("code, expected", [
    # reductions of a tensor that may be empty: the value over no elements is padded on (record
    # field `empty_value`; MindSpore returns uninitialised memory for an empty reduction)
    ("x = torch.randn(4)\ny = x[x > 9].sum()\n", "ops.sum(ops.pad(x[x > 9].reshape(-1), (0, 1), value=0))"),
    ("x = torch.randn(4)\nm = x > 9\ny = torch.all(x[m])\n", "ops.all(ops.pad(x[m].reshape(-1), (0, 1), value=True))"),
    ("y = torch.tensor([]).prod()\n", "value=1)"),
    ("y = torch.full((0,), 2.0).sum()\n", "value=0)"),          # the size, not the fill value
    ("y = torch.linspace(0, 1, 0).sum()\n", "value=0)"),        # steps
    ("y = torch.randint(5, size=(0, 2)).sum()\n", "value=0)"),
])
def test_reductions_of_maybe_empty_tensors_never_reduce_nothing(code, expected):
    assert expected in body(code)


@pytest.mark.parametrize("code", [
    "x = torch.randn(4)\ny = x.sum()\n",                 # not a selection
    "x = torch.randn(4)\ny = x[x > 9].sum(0)\n",         # one axis: MindSpore reduces it right
    "x = torch.randn(4)\ny = x[0].sum()\n",                    # an integer index
    "y = torch.linspace(0, 1, 5).sum()\n",              # a 0 that is not a size
    "y = torch.randint(0, 5, (3,)).sum()\n",
    "y = torch.full((3,), 0.0).sum()\n",
])
def test_other_reductions_are_left_as_they_are(code):
    assert "ops.pad" not in body(code)


def test_join_of_mixed_kinds_casts_inside_not_after():
    # torch.cat of int64 and float32 is float32 (record field `joined`: the int tensor is cast for
    # MindSpore's Concat); the kind of the result is not guessed for exp's promote
    out = body("y = torch.exp(torch.cat([torch.arange(2), torch.randn(2)]))\n")
    assert "y = ops.exp(msmigrate_float(ops.cat([ops.arange(2).astype(ms.float32), ops.randn(2)])))" in out


@pytest.mark.parametrize("code, expected", [
    ("a = torch.ones(2)\nd = torch.ones(2, dtype=torch.float64)\ny = torch.cat([a, d])\n",
     "y = ops.cat([a.astype(ms.float64), d])"),
    ("a = torch.ones(2, 2)\nd = torch.ones(1, 1).double()\ny = torch.block_diag(a, d)\n",
     "y = ops.block_diag(a.astype(ms.float64), d)"),
    ("k = torch.tensor([1, 2])\ny = torch.stack((k, k > 1), dim=1)\n",
     "y = ops.stack((k, (k > 1).astype(ms.int64)), axis=1)"),
])
def test_joins_of_visibly_different_kinds_are_promoted(code, expected):
    assert expected in body(code)


@pytest.mark.parametrize("code", [
    "def f(a, d):\n    return torch.cat([a, d])\n",                            # unknown dtypes
    "a = torch.ones(2)\ny = torch.cat([a, torch.randn(2)])\n",                  # one kind
    "d = torch.ones(2).double()\ny = torch.block_diag(d, torch.tensor([[1 + 2j]]))\n",   # complex128
])
def test_joins_of_one_or_unknown_kinds_are_not_cast(code):
    assert ".astype(" not in body(code)


@pytest.mark.parametrize("code, expected", [
    # complex tensors (record field `complex`): the function of the real and imaginary parts
    ("z = torch.tensor([1 + 2j, 3j])\ny = torch.isnan(z)\n", "y = ops.isnan(ops.real(z)) | ops.isnan(ops.imag(z))"),
    ("z = torch.ones(2, dtype=torch.complex64)\ny = z.isinf()\n", "y = ops.isinf(ops.real(z)) | ops.isinf(ops.imag(z))"),
    ("z = torch.randn(2).cfloat()\ny = torch.isfinite(z)\n", "y = ops.isfinite(ops.real(z)) & ops.isfinite(ops.imag(z))"),
    ("z = torch.tensor([1 + 2j])\ny = torch.logaddexp(z, z)\n", "y = msmigrate_logaddexp(z, z)"),
    # bool tensors: square of bool is int64 in torch (record field `promote_as`: no cast back)
    ("b = torch.tensor([True, False])\ny = torch.square(b)\n", "y = ops.square(b.astype(ms.int64))"),
    ("b = torch.tensor([True, False])\ny = b.aminmax()\n",
     "y = msmigrate_cast_pair(*ops.aminmax(b.astype(ms.int32).reshape(-1)), b.dtype)"),
])
def test_complex_and_bool_kinds_without_a_kernel(code, expected):
    assert expected in body(code)


@pytest.mark.parametrize("code", [
    "def f(z):\n    return torch.isnan(z) | torch.isinf(z) | z.isfinite()\n",
    "y = torch.isnan(torch.randn(3))\n",
    "def f(z):\n    return torch.logaddexp(z, z)\n",
    "def f(b):\n    return torch.square(b), torch.aminmax(b)\n",
])
def test_unknown_or_real_kinds_convert_as_before(code):
    out = body(code)
    assert ".astype(" not in out and "ops.real" not in out and "msmigrate_" not in out


@pytest.mark.parametrize("code, expected", [
    # tensors that may be empty: an element appended where MindSpore's kernel raises on an empty
    # tensor, dropped after (records' empty_pad, empty_reduce, empty_sizes)
    ("x = torch.randn(4)\ny = torch.digamma(x[x > 9])\n", "y = ops.digamma(ops.pad(x[x > 9], (0, 1), value=1))[:-1]"),
    ("e = torch.zeros(0, 3)\ny = e.conj()\n", "y = ops.conj(ops.pad(e, (0, 0, 0, 1)))[:-1]"),
    ("x = torch.randn(4)\ny = torch.special.zeta(x[x > 9] + 2, x[x > 9])\n",
     "y = ops.zeta(ops.pad(x[x > 9] + 2, (0, 1), value=2), ops.pad(x[x > 9], (0, 1), value=1))[:-1]"),
    ("x = torch.randn(4, 3)\ny = x[x[:, 0] > 9].argmax(dim=1)\n", "y = ops.argmax(ops.pad(x[x[:, 0] > 9], (0, 0, 0, 1)), dim=1)[:-1]"),
    ("e = torch.zeros(3, 0, 2)\ny = torch.argmin(e, 2, keepdim=True)\n",
     "y = ops.argmin(ops.pad(e, (0, 0, 0, 1)), 2, keepdims=True).astype(ms.int64)[:, :-1]"),
    ("x = torch.randn(4, 3)\nv, i = torch.max(x[x[:, 0] > 9], -1)\n",
     "v, i = msmigrate_drop_last_pair(*ops.max(ops.pad(x[x[:, 0] > 9], (0, 0, 0, 1)), -1), (0, ))"),
    ("x = torch.randn(6)\ny = torch.fft.rfft(x[x > 9], n=8)\n", "y = ops.rfft(ops.pad(x[x > 9], (0, 1)), n=8)"),
    ("e = torch.zeros(0, 4)\ny = torch.fft.fft2(e, (3, 4), (1, 0))\n", "y = ops.fft2(ops.pad(e, (0, 0, 0, 1)), (3, 4), (1, 0))"),
])
def test_functions_raising_on_empty_tensors_get_an_element(code, expected):
    assert expected in body(code)


@pytest.mark.parametrize("code", [
    "def f(x):\n    return torch.digamma(x), x.argmax(1), torch.fft.fft(x, n=4), torch.conj(x)\n",
    "x = torch.randn(4)\ny = torch.digamma(x[x > 9] + torch.randn(1))\n",     # its shape: read twice
    "x = torch.randn(4)\ny = torch.special.zeta(x[x > 9], torch.ones(1))\n",  # another tensor: no pad
    "x = torch.randn(4)\ny = torch.special.zeta(x[x > 9], 2.0)\n",            # a number with it
    "x = torch.randn(4, 3)\ny = torch.argmax(x[x[:, 0] > 9], dim=0)\n",       # the dim that may be empty
    "def f(x):\n    return torch.argmax(x[x > 0], dim=1)\n",                     # rank not visible
    "x = torch.randn(6)\ny = torch.fft.rfft(x[x > 9])\n",                      # no n: nothing to pad to
    "e = torch.zeros(0, 4)\ny = torch.fft.fft(e, n=3, dim=1)\n",               # empty along another dim
])
def test_other_calls_on_maybe_empty_tensors_are_left(code):
    assert "ops.pad" not in body(code)


@pytest.mark.parametrize("code, expected", [
    # 0-d tensors reduced over dim 0 / -1 (record field scalar_dim)
    ("z = torch.tensor(1.5)\ny = torch.std(z, dim=0)\n", "y = ops.std(z.reshape(1), axis=0, ddof=1).reshape(())"),
    ("z = torch.tensor(0.5)\ny = torch.softmax(z, -1)\n", "y = ops.softmax(z.reshape(1), -1).reshape(())"),
    # unbatched input (record field unbatched)
    ("x = torch.randn(3, 8, 8)\ny = F.conv2d(x, w)\n", "y = ops.conv2d(x[None], w)[0]"),
    ("img = torch.randn(2, 3, 8, 8)\ny = F.unfold(img[0], 2)\n", "y = ops.unfold(img[0][None], 2)[0]"),
    ("v = torch.randn(4)\ny = F.cosine_embedding_loss(v, v, torch.tensor(1))\n",
     "y = ops.cosine_embedding_loss(v[None], v[None], ms.tensor(1)[None])\n"),
])
def test_visible_ranks_torch_takes_and_mindspore_does_not(code, expected):
    assert expected in body("import torch.nn.functional as F\n" + code)


@pytest.mark.parametrize("code", [
    "def f(z):\n    return torch.std(z, dim=0), torch.softmax(z, 0)\n",
    "z = torch.tensor([1.5])\ny = torch.std(z, dim=0)\n",                   # 1-D
    "def f(x, w):\n    return F.conv2d(x, w), F.unfold(x, 2)\n",
    "x = torch.randn(1, 3, 8, 8)\ny = F.conv2d(x, w)\n",                      # batched
    "x = torch.randn(3, 8, 8)\ny = F.conv2d(x.view(1, 3, 8, 8), w)\n",
])
def test_unknown_or_torch_ranks_convert_as_before(code):
    out = body("import torch.nn.functional as F\n" + code)
    assert "reshape(1)" not in out and "[None]" not in out
