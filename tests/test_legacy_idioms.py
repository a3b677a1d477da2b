"""A tensor type picked by device and bound to a name (`Tensor = torch.cuda.FloatTensor if cuda
else torch.FloatTensor`), then called (`Tensor(n, 1).fill_(1.0)`) and used as a cast
(`imgs.type(Tensor)`): PyTorch-GAN's idiom (rules/tensor_type_names.py), with layers initialised
through `apply` and `.data`. fixtures/programs/gan_tensor_types.py runs it around a generator and a
discriminator step against torch."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import FIXTURES
from msmigrate import convert_source
from test_values_change_type import _outputs, _same_line


@pytest.mark.framework
@pytest.mark.parametrize("cpu_type", ["torch.FloatTensor", "torch.Tensor"])   # both spellings occur
def test_gan_with_tensor_type_names_trains_like_torch(tmp_path, cpu_type):
    src = tmp_path / "gan_tensor_types.py"
    text = (FIXTURES / "programs" / "gan_tensor_types.py").read_text()
    src.write_text(text.replace("else torch.FloatTensor", f"else {cpu_type}"))
    result = convert_source(src.read_text(), src.name)
    assert "MSC108" not in {d.code for d in result.diagnostics}, result.diagnostics
    assert 'find("Dense")' in result.code
    want, got = ([ln.rsplit(" ", 1)[0] for ln in out] for out in _outputs(src, result.code, tmp_path))
    assert len(want) == 3 and len(got) == 3, (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


def test_torch_tensor_is_the_default_type_only_beside_a_float_tensor_type():
    src = ("import torch\nimport numpy as np\nT = torch.cuda.FloatTensor if cuda else torch.Tensor\n"
           "x = imgs.type(T)\nz = T(np.zeros(3))\nU = torch.cuda.LongTensor if cuda else torch.Tensor\n"
           "ok = isinstance(x, torch.Tensor)\n")
    code = convert_source(src, "m.py").code
    assert "x = imgs.astype(ms.float32)" in code and "z = ms.Tensor(np.zeros(3), dtype=ms.float32)" in code, code
    assert "isinstance(x, ms.Tensor)" in code and "U = ms.int64 if cuda else ms.Tensor" in code, code


def test_a_name_bound_to_two_tensor_types_is_left_alone():
    src = ("import torch\nT = torch.FloatTensor\nif flag:\n    T = torch.LongTensor\nx = T(2, 3)\n")
    code = convert_source(src, "m.py").code
    assert "x = T(2, 3)" in code


@pytest.mark.framework
def test_loss_read_with_data_index_runs_like_item_under_torch(tmp_path):
    """`loss.data[0]` (PyTorch <= 0.3) raises IndexError in torch >= 0.4: the converted program
    prints what torch prints for the program written with `.item()` there."""
    src = FIXTURES / "programs" / "legacy_loss_data_index.py"
    legacy = src.read_text()
    result = convert_source(legacy, src.name)
    assert "MSC108" not in {d.code for d in result.diagnostics}, result.diagnostics
    assert sum(".data[0]" in d.message for d in result.diagnostics) == 4
    assert "model.bias.data[0]" in result.code
    modern = tmp_path / "modern" / src.name
    modern.parent.mkdir()
    modern.write_text(legacy.replace("loss.data[0]", "loss.item()").replace("False).data[0]", "False).item()"))
    assert ".data[0]" in modern.read_text()   # the bias read stays: the test changes losses only
    want, got = _outputs(modern, result.code, tmp_path)
    assert len(want) == 8 and len(got) == len(want), (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))
    # the premise: torch >= 0.4 rejects the legacy reads
    legacy_path = tmp_path / "legacy.py"
    legacy_path.write_text(legacy)
    proc = subprocess.run([sys.executable, str(legacy_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "IndexError: invalid index of a 0-dim tensor" in proc.stderr
