"""A tensor type picked by device and bound to a name (`Tensor = torch.cuda.FloatTensor if cuda
else torch.FloatTensor`), then called (`Tensor(n, 1).fill_(1.0)`) and used as a cast
(`imgs.type(Tensor)`): PyTorch-GAN's idiom (rules/tensor_type_names.py), with layers initialised
through `apply` and `.data`. fixtures/programs/gan_tensor_types.py runs it around a generator and a
discriminator step against torch."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from msmigrate import convert_source
from test_values_change_type import _outputs, _same_line


@pytest.mark.framework
def test_gan_with_tensor_type_names_trains_like_torch(tmp_path):
    src = FIXTURES / "programs" / "gan_tensor_types.py"
    result = convert_source(src.read_text(), src.name)
    assert "MSC108" not in {d.code for d in result.diagnostics}, result.diagnostics
    assert 'find("Dense")' in result.code
    want, got = ([ln.rsplit(" ", 1)[0] for ln in out] for out in _outputs(src, result.code, tmp_path))
    assert len(want) == 3 and len(got) == 3, (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


def test_a_name_bound_to_two_tensor_types_is_left_alone():
    src = ("import torch\nT = torch.FloatTensor\nif flag:\n    T = torch.LongTensor\nx = T(2, 3)\n")
    code = convert_source(src, "m.py").code
    assert "x = T(2, 3)" in code
