"""A NumPy scalar on the left of an operator with a tensor (rules/numpy_operands.py): torch gives
a Tensor (torch.Tensor's __array_priority__), MindSpore's Tensor let NumPy compute a float64
ndarray that the next op rejected. Converted files showing such an operand give MindSpore's
Tensor torch's priority once after their imports; run against torch."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES
from msmigrate import convert_source

PROGRAM = FIXTURES / "programs" / "numpy_scalar_operands.py"
CALL = "msmigrate_numpy_defers_to_tensors()"


def _run(path, cwd):
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.framework
def test_numpy_scalars_on_the_left_give_torch_values(tmp_path):
    result = convert_source(PROGRAM.read_text(), PROGRAM.name)
    assert result.code.count(f"\n{CALL}") == 1 and not result.diagnostics, result.diagnostics
    out = tmp_path / PROGRAM.name
    out.write_text(result.code)
    want, got = _run(PROGRAM, tmp_path), _run(out, tmp_path)
    assert got["kinds"] == want["kinds"] == ["Tensor", "Tensor", "Tensor"]
    assert got["above"] == want["above"]
    for key in ("y", "shifted", "loss", "grad"):
        np.testing.assert_allclose(np.array(got[key]), np.array(want[key]), rtol=1e-5, atol=1e-5, err_msg=key)
    # without the call NumPy computes `w * x` and MindSpore's cos rejects the ndarray
    bare = tmp_path / "bare.py"
    bare.write_text(result.code.replace(f"\n{CALL}", "\npass", 1))
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(bare)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0 and "numpy.ndarray" in proc.stderr


@pytest.mark.parametrize("source, added", [
    ("import numpy as np\nimport torch\nw = np.sqrt(3.0)\ny = w * torch.ones(2)\n", True),
    ("import numpy as np\nimport torch\nA = 1 / (2 * np.cos(0.1))\ny = A * torch.ones(2)\n", True),   # through arithmetic
    ("import numpy as np\nimport torch\ny = np.log(2.0) + torch.ones(2)\n", True),
    ("import numpy as np\nimport torch\nt = torch.ones(2)\nok = np.float64(0.5) < t\n", True),  # comparisons too
    ("import numpy as np\nimport torch\ny = torch.ones(2) * np.sqrt(3.0)\n", False),   # the Tensor's own operator
    ("import numpy as np\nimport torch\ny = np.pi * torch.ones(2)\n", False),   # a Python float
    ("import numpy as np\nimport torch\nw = np.sqrt(3.0)\nz = w * 2.0\n", False),   # NumPy's either way
    ("import numpy as np\nimport torch\nt = torch.from_numpy(np.ones(3))\ny = t * torch.ones(3)\n", False),   # a Tensor
    ("import torch\ny = 2 * torch.ones(2)\n", False),
])
def test_the_priority_is_given_where_a_numpy_value_is_on_the_left(source, added):
    code = convert_source(source, "t.py").code
    assert (CALL in code) == added, code
    if added:   # after the imports, the generated definition before it
        lines = code.splitlines()
        at = lines.index(next(ln for ln in lines if ln.startswith(CALL)))
        assert all(not ln.startswith(("import ", "from ")) for ln in lines[at:])
        assert code.index(f"def {CALL}") < code.index(f"\n{CALL}")


ARRAYS_CALL = "msmigrate_tensor_takes_ndarrays()"
ARRAYS_PROGRAM = '''
import json
import numpy as np
import torch

d = 6
div_term = 1 / (10000 ** ((2 * np.arange(d)) / d))
position = torch.arange(0, 5, dtype=torch.float).unsqueeze(1)
pe = torch.zeros(5, d)
pe[:, 0::2] = torch.sin(position * div_term[0::2])
pe[:, 1::2] = torch.cos(position * div_term[1::2])
shifted = position - np.ones((5, 1), dtype=np.float32)
print(json.dumps({"pe": pe.tolist(), "dtype": str(pe.dtype).split(".")[-1], "shifted": shifted.tolist(),
                  "wide": str((position * div_term).dtype).split(".")[-1].lower()}))
'''


@pytest.mark.framework
def test_an_ndarray_on_the_right_of_a_tensor_operator_gives_torch_values(tmp_path):
    result = convert_source(ARRAYS_PROGRAM, "arrays.py")
    assert result.code.count(f"\n{ARRAYS_CALL}") == 1, result.code
    src, out = tmp_path / "arrays.py", tmp_path / "arrays_ms.py"
    src.write_text(ARRAYS_PROGRAM)
    out.write_text(result.code)
    want, got = _run(src, tmp_path), _run(out, tmp_path)
    np.testing.assert_allclose(np.array(got["pe"]), np.array(want["pe"]), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.array(got["shifted"]), np.array(want["shifted"]))
    assert got["wide"] == want["wide"] == "float64"   # the array read as a float64 tensor, as torch does


@pytest.mark.parametrize("source, added", [
    ("import numpy as np\nimport torch\nw = np.arange(3)\ny = torch.ones(3) * w\n", True),
    ("import numpy as np\nimport torch\ny = torch.ones(3) - np.ones(3)\n", True),
    ("import numpy as np\nimport torch\ny = torch.ones(3) * 2.0\n", False),
    ("import numpy as np\nimport torch\ny = torch.ones(3) @ torch.ones(3)\n", False),
    ("import numpy as np\nimport torch\nw = np.arange(3)\nok = torch.ones(3) < w\n", False),   # torch's < refuses it
    # NumPy scalars: MindSpore's Tensor takes them (BERT's `scores / np.sqrt(d_k)`, cgan's int(np.prod(...)))
    ("import numpy as np\nimport torch\ny = torch.ones(3) / np.sqrt(8)\n", False),
    ("import numpy as np\nimport torch\nn = 3 + int(np.prod((2, 2)))\ny = torch.ones(3) * n\n", False),
])
def test_the_array_operators_are_given_where_a_numpy_value_is_on_the_right(source, added):
    assert (ARRAYS_CALL in convert_source(source, "t.py").code) == added
