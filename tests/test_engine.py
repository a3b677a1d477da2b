"""Engine properties that fixtures alone do not pin down."""
from __future__ import annotations

import pytest

from msmigrate import convert_source


@pytest.mark.parametrize("source", [
    "x = 1\n",
    '"""Works like torch.nn.Linear."""\ny = x.detach().size(0)\n',   # mentions torch, imports none
    "import numpy as np\nz = np.repeat(a, 2).std()\n",
])
def test_files_without_torch_imports_are_untouched(source):
    result = convert_source(source, "f.py")
    assert result.code == source and not result.diagnostics


def test_every_import_style_resolves_to_the_same_api():
    styles = ["import torch\nm = torch.nn.Linear(2, 3)\n",
              "import torch as t\nm = t.nn.Linear(2, 3)\n",
              "import torch.nn as nn\nm = nn.Linear(2, 3)\n",
              "from torch import nn\nm = nn.Linear(2, 3)\n",
              "from torch.nn import Linear\nm = Linear(2, 3)\n",
              "from torch.nn import Linear as L\nm = L(2, 3)\n",
              "import torch.nn\nm = torch.nn.Linear(2, 3)\n"]
    for source in styles:
        code = convert_source(source, "f.py").code
        assert "nn.Dense(2, 3)" in code and "torch" not in code, (source, code)


def test_local_names_shadow_torch():
    source = ("import torch\n\ndef f(torch):\n    return torch.zeros(3)\n\n"
              "def g():\n    nn = make()\n    return nn.Linear(1)\n")
    code = convert_source(source, "f.py").code
    assert "return torch.zeros(3)" in code and "return nn.Linear(1)" in code


def test_new_alias_avoids_names_the_file_uses():
    source = "import torch.nn as tnn\nops = []\nlayer = tnn.ReLU()\ny = tnn.functional.relu(x)\n"
    code = convert_source(source, "f.py").code
    assert "ops = []" in code and "ms.ops.relu(x)" in code


def test_positions_point_at_the_original_source():
    source = "import torch.nn as nn\n\n\nlayer = nn.Conv2d(1, 1, 3, padding_mode='circular')\n"
    (diag,) = convert_source(source, "f.py").diagnostics
    assert (diag.line, diag.col, diag.code) == (4, 9, "MSC105")


def test_syntax_error_has_a_position():
    from msmigrate import InputError

    with pytest.raises(InputError) as info:
        convert_source("import torch\ndef f(:\n", "bad.py")
    d = info.value.diagnostic
    assert (d.path, d.line, d.code) == ("bad.py", 2, "MSC001")


def test_transform_only_apis_used_as_values_are_flagged_the_same_every_run():
    """Transforms are written for calls: a bare reference (`op = F.embedding`, a decorator
    argument) is marked for manual work, with no exception text that could vary by run."""
    import os
    import subprocess
    import sys

    src = ("import torch\nimport torch.nn.functional as F\n\nop = F.embedding\n"
           "fns = [F.normalize]\n\n@register(torch.nn.functional.embedding)\ndef f(x):\n    return x\n")
    result = convert_source(src)
    assert [(d.line, d.code, d.status) for d in result.diagnostics] == [
        (1, "MSC108", "manual"), (4, "MSC102", "manual"), (5, "MSC102", "manual"), (7, "MSC102", "manual")]
    assert "torch.nn.functional.embedding" in result.code
    script = ("import sys; from msmigrate import convert_source; "
              "print(convert_source(sys.stdin.read()).code)")
    outputs = {subprocess.run([sys.executable, "-c", script], input=src, capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True).stdout
               for seed in ("1", "2", "3")}
    assert len(outputs) == 1


def test_a_step_whose_graph_would_freeze_python_values_is_left_uncompiled():
    """The converter lints its own output: a forward drawing from `random` would be frozen by
    @ms.jit (the same depth every step, silently), so that step runs in PyNative with MSC109;
    the same program without the draw is compiled. (tests/test_parity_programs.py runs
    fixtures/programs/train_random_depth.py against torch.)"""
    src = ("import random\nimport torch\nimport torch.nn as nn\n\n"
           "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.fc = nn.Linear(4, 1)\n\n    def forward(self, x):\n"
           "        return self.fc(x) * random.random()\n\n"
           "net = Net()\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
           "for step in range(3):\n    loss = net(torch.ones(2, 4)).sum()\n"
           "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")
    result = convert_source(src, "t.py")
    assert [(d.line, d.code) for d in result.diagnostics] == [(11, "MSC109")]
    assert "MSG203" in result.diagnostics[0].message and "train_step" in result.diagnostics[0].message
    assert "@ms.jit" not in result.code and "def train_step(" in result.code
    sound = convert_source(src.replace(" * random.random()", ""), "t.py")
    assert sound.diagnostics == [] and "@ms.jit\ndef train_step(" in sound.code


def test_names_first_bound_in_a_compiled_loop_are_bound_before_it():
    """MindSpore's compiler refuses a name first bound in a loop and read after it (MSG120);
    the converter writes the linter's safe fix (`output = None` before the loop) and keeps the
    step compiled, in the step's own code and in a forward alike. (tests/test_parity_programs.py
    runs fixtures/programs/train_rnn_output_after_loop.py against torch.)"""
    src = ("import torch\nimport torch.nn as nn\n\n"
           "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
           "        for k in range(2):\n            x = self.fc(x)\n        return x * k\n\n"
           "net = Net()\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\nxs = torch.ones(3, 2, 4)\n"
           "for step in range(3):\n    opt.zero_grad()\n    for t in range(xs.size(0)):\n"
           "        out = net(xs[t])\n    loss = out.sum()\n    loss.backward()\n    opt.step()\n")
    result = convert_source(src, "t.py")
    assert result.diagnostics == []
    assert "        k = None\n        for k in range(2):" in result.code
    assert "    out = None\n    for t in range(xs.shape[0]):" in result.code
    assert "@ms.jit\ndef train_step(" in result.code


def test_methods_of_a_plain_class_named_like_a_modules_keep_their_calls():
    """A plain class of the program with its own `train`/`eval` (a PINN solver): called on the
    constructor's result (`Solver(3).train(2)`) or on what a method returning `self` gave, they
    became MindSpore's `set_train(...)`, which the object lacks (AttributeError)."""
    src = ("import torch\nimport torch.nn as nn\n\nclass Solver:\n    def __init__(self, n):\n"
           "        self.net = nn.Linear(2, 1)\n        self.n = n\n\n    def train(self, epochs):\n"
           "        self.n += epochs\n        return self\n\n    def eval(self):\n        return self.n\n\n"
           "s = Solver(3).train(2)\nSolver(3).train(1)\nprint(s.eval())\nnet = nn.Linear(2, 2).train(False)\n"
           "net.eval()\n")
    code = convert_source(src, "t.py").code
    assert "s = Solver(3).train(2)\nSolver(3).train(1)\nprint(s.eval())\n" in code, code
    assert "net.set_train(False)" in code and "set_train(False)\n" in code.split("Solver(3).train(1)")[1]


def test_accelerate_with_features_that_change_the_step_is_marked_not_rewritten():
    """An Accelerator with mixed precision is not plain torch: marked for manual work, its
    `accelerator.backward(loss)` is no Tensor.backward (no step built around the Accelerator),
    and the file stops at its top (accelerate is a torch library)."""
    src = ("import torch\nfrom accelerate import Accelerator\n\n"
           'accelerator = Accelerator(mixed_precision="fp16")\nmodel = torch.nn.Linear(2, 1)\n'
           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel, opt = accelerator.prepare(model, opt)\n"
           "for _ in range(2):\n    loss = model(torch.ones(1, 2)).sum()\n    opt.zero_grad()\n"
           "    accelerator.backward(loss)\n    opt.step()\n")
    result = convert_source(src, "t.py")
    assert [(d.line, d.code) for d in result.diagnostics] == [(1, "MSC108"), (4, "MSC102")]
    assert "train_step" not in result.code and "accelerator.backward(loss)" in result.code
    assert result.code.index("raise RuntimeError") < result.code.index("from accelerate import Accelerator")


def test_objects_made_in_one_tuple_assignment_convert_their_calls_everywhere():
    """`mse, xent = nn.MSELoss(), nn.CrossEntropyLoss()`: the calls of each in a function are
    converted as for an object assigned alone (the int64 labels cast to int32 MindSpore's cross
    entropy requires); they were left as written, and the program failed on int64 labels."""
    src = ("import torch.nn as nn\nmse, xent = nn.MSELoss(), nn.CrossEntropyLoss()\n"
           "def f(logits, y, d, t):\n    return mse(d, t) + xent(logits, y)\n")
    code = convert_source(src, "t.py").code
    assert "xent(logits, y.astype(ms.int32))" in code and "mse(d, t)" in code, code


def test_zero_grad_outside_the_step_is_dropped():
    """`optimizer.zero_grad()` (or a network's) before the loop of steps stayed in the converted
    file, and MindSpore's optimizers and Cells have no zero_grad: AttributeError mid-run."""
    src = ("import torch\nnet = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
           "opt.zero_grad()\nnet.zero_grad()\nfor x in [torch.ones(2, 3)]:\n    loss = net(x).sum()\n"
           "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")
    code = convert_source(src, "t.py").code
    assert "zero_grad" not in code and "train_step(" in code, code


def test_out_argument_is_written_where_the_call_is_a_statement():
    """MindSpore has no out=: a statement's value goes where torch would have written it (the
    per-API suite's `out=o` forms run this against torch); a used value keeps the marker."""
    code = ("import torch\na = torch.randn(2)\no = torch.zeros(2)\nbuf = [torch.zeros(2)]\n"
            "torch.add(a, a, out=o)\ntorch.exp(a, out=buf[0])\ny = torch.mul(a, 2, out=o)\n")
    result = convert_source(code, "t.py")
    assert "o = ops.add(a, a).astype(o.dtype)" in result.code
    assert "buf[0] = ops.exp(a)" in result.code
    assert [d.code for d in result.diagnostics] == ["MSC105"] and "out=o" in result.diagnostics[0].message


def test_numpy_keyword_names_of_torch_calls_become_torchs_and_numpy_calls_keep_theirs():
    """torch's argument parser takes axis=/keepdims= for dim=/keepdim= (MindSpore's functions do
    not, and Tensor.std(axis=) is NumPy's ddof=0 overload there): renamed on torch's functions and
    on methods of a tensor a torch function made; a NumPy array's methods keep NumPy's names (the
    per-API suite runs the torch forms: tests/api_suite/cases/reductions.toml numpy_names)."""
    code = ("import numpy as np\nimport torch\nX = np.ones((3, 2))\nm = X.std(axis=0, keepdims=True)\n"
            "a = torch.rand(3, 4)\nb = torch.cumprod(a, axis=0)\nc = a.mean(axis=0, keepdims=True)\n")
    out = convert_source(code, "m.py").code
    assert "X.std(axis=0, keepdims=True)" in out
    assert "ops.cumprod(a, dim=0)" in out and "a.mean(dim=0, keepdim=True)" in out


@pytest.mark.parametrize("trigger", [
    "import random\nimport numpy as np\nrandom.seed(0)\nnp.random.seed(0)\nnet = torch.nn.Linear(2, 2)\nz = np.random.rand(3)\n",
    "from sklearn.model_selection import train_test_split\na, b = train_test_split(torch.ones(4, 2), test_size=0.5)\n",
    "from accelerate import Accelerator\naccelerator = Accelerator()\ndevice = accelerator.device\n",
    "w = torch.ones(3)\nfor i in range(2):\n    w.requires_grad_(True)\n    (w * w).sum().backward()\n"
    "    with torch.no_grad():\n        w = w - 0.1 * w.grad\nv = torch.ones(2, 2)\nv.requires_grad_()\n"
    "s = (v * 3).sum()\ns.backward()\nprint(v.grad)\nnet2 = torch.nn.Linear(2, 2)\n"
    "for p in net2.parameters():\n    p.requires_grad_()\n",
])
def test_a_structural_pass_leaves_other_statements_their_lines(trigger):
    """A pass that rebuilt every statement of a file that merely mentions what it rewrites
    (`random.seed(`, `sklearn`, an Accelerator, statements after a top-level backward pass)
    left the table pass's diagnostics elsewhere in the file at 1:1."""
    source = "import numpy\nimport torch\n" + trigger + "x = torch.FloatTensor(numpy.ones((3, 2)))\n"
    line = source.count("\n")
    found = [d for d in convert_source(source, "f.py").diagnostics if "FloatTensor" in d.message]
    assert [(d.line, d.col) for d in found] == [(line, 5)], convert_source(source, "f.py").diagnostics


def test_a_function_returning_its_argument_rebound_in_a_cycle_converts():
    """`node = keep(node)` with `def keep(n): return n` (torch's own partitioners.py): following
    what a call passes through went round the cycle until Python's recursion limit."""
    source = ("import torch\n\n\ndef keep(n):\n    return n\n\n\ndef use(m):\n    return m\n\n\ndef run():\n"
              "    module = torch.nn.Linear(2, 2)\n    module = keep(module)\n    use(module)\n\n\nrun()\n")
    assert "nn.Dense(2, 2)" in convert_source(source, "f.py").code


def test_image_library_values_keep_their_own_methods():
    """PIL's `img.resize((w, h))` shares a torch Tensor method's name: a value visibly made by an
    array or image library (rules.ARRAY_LIBRARIES) is left as written, unmarked."""
    source = ("import torch\nfrom PIL import Image\nimport cv2\n\nimg = Image.open('a.png').convert('RGB')\n"
              "img = img.resize((32, 32))\nframe = cv2.imread('b.png')\nsmall = frame.resize((8, 8))\n"
              "t = torch.zeros(3)\n")
    result = convert_source(source, "f.py")
    assert "img = img.resize((32, 32))" in result.code and "small = frame.resize((8, 8))" in result.code
    assert not result.diagnostics, result.diagnostics


def test_arrays_a_file_function_returns_keep_their_own_methods(tmp_path):
    """`X, y = make_table(n)` of a function returning NumPy arrays: `X.std(0)` is NumPy's
    (ddof 0), not torch's Tensor.std (it became ops.std(X, ..., ddof=1): TypeError on an
    ndarray); a function returning a tensor in one of its returns gives no such fact."""
    from test_values_change_type import _outputs

    source = ("import numpy as np\nimport torch\n\n\ndef make_table(n):\n"
              "    X = np.linspace(-1.0, 2.0, n * 3).reshape(n, 3).astype(np.float32)\n"
              "    return X, (X[:, 0] > 0).astype(np.int64)\n\n\n"
              "def either(n, t):\n    if t:\n        return torch.ones(n)\n    return np.ones(n)\n\n\n"
              "X, y = make_table(4)\nZ = either(3, True)\n"
              "print('std', X.std(0).round(4).tolist(), 'max', X.max(0).tolist(), 'rep', X.repeat(2).shape)\n"
              "print('sum', round(float(torch.tensor(X).sum()), 4), 'z', Z.sum().item())\n")
    src = tmp_path / "table.py"
    src.write_text(source)
    code = convert_source(source, "table.py").code
    assert "X.std(0)" in code and "X.repeat(2)" in code and "Z.sum()" in code, code
    want, got = _outputs(src, code, tmp_path)
    assert want == got, (want, got)


def test_an_in_place_method_binds_its_keywords_as_the_method_does():
    """`t.scatter_reduce_(..., reduce='sum')`: the in-place record takes the out-of-place method's
    signature (a call that did not bind was left as written, and raised in MindSpore)."""
    source = ("import torch\nt = torch.zeros(3, 4)\ni = torch.tensor([[0, 1, 2, 0]])\ns = torch.ones(1, 4)\n"
              "t.scatter_reduce_(0, i, s, reduce='sum')\nt.scatter_reduce_(dim=0, index=i, src=s, reduce='amax')\n"
              "u = t.share_memory_()\n")
    result = convert_source(source, "f.py")
    assert "t[...] = ops.tensor_scatter_elements(t, i, (s if s.shape == i.shape" in result.code
    assert "t[...] = msmigrate_scatter_reduce(t, 0, i, s, 'amax')" in result.code
    assert "u = t\n" in result.code and "_(" not in result.code.split("u = t")[0].split("s = ops.ones")[1]


def test_classes_named_in_annotations_are_renamed_without_markers():
    """`x: torch.Tensor` only names the class, as isinstance does: no "used as a value" marker
    about argument differences (there is no call); a class used as a value elsewhere still gets one."""
    src = ("import torch\nfrom torch import nn\n\n"
           "def f(x: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:\n    return x\n\n"
           "Norm = nn.LayerNorm\n")
    result = convert_source(src)
    assert "def f(x: ms.Tensor, norm: nn.LayerNorm) -> ms.Tensor:" in result.code
    assert [d.line for d in result.diagnostics] == [7]


def test_comments_after_the_arguments_of_a_rebuilt_multi_line_call_stay_with_their_arguments():
    src = ("import torch.nn as nn\n\nnet = nn.Sequential(\n    nn.Linear(4, 8),  # first\n    nn.ReLU(),  # act\n"
           "    nn.Linear(8, 2),  # last\n)\nup = nn.ConvTranspose2d(\n    8, 4, 3,  # sizes\n    stride=2,\n)\n")
    code = convert_source(src).code
    assert "    nn.Dense(4, 8),  # first\n    nn.ReLU(),  # act\n    nn.Dense(8, 2),  # last\n)" in code
    assert code.count("# sizes") == 1 and code.count("# act") == 1, code


def test_requires_grad_of_a_parameter_loop_and_buffers_are_said_once():
    """`for p in ema.parameters(): p.requires_grad_(False)` (also when the name is bound again by a
    zip of two parameters() loops) sets a Parameter's requires_grad: no 'plain tensor' marker; a
    loop over a list of tensors keeps it. buffers() of a file with BatchNorm: one marker per file."""
    src = ("import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))\n"
           "ema = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))\nfor p in ema.parameters():\n    p.requires_grad_(False)\n"
           "for pe, p in zip(ema.parameters(), model.parameters()):\n    pe.data.copy_(p.data)\n"
           "for be, b in zip(ema.buffers(), model.buffers()):\n    be.data.copy_(b.data)\n")
    result = convert_source(src, "t.py")
    assert "p.requires_grad = False" in result.code
    assert not [d for d in result.diagnostics if "requires_grad" in d.message], result.diagnostics
    assert len([d for d in result.diagnostics if "num_batches_tracked" in d.message]) == 1
    plain = convert_source("import torch\nw = torch.zeros(3)\nfor p in [w]:\n    p.requires_grad_(True)\n", "t.py")
    assert [d for d in plain.diagnostics if "only a Parameter's requires_grad" in d.message]
