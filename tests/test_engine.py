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
