"""Sparse COO tensors become the dense tensors they stand for (rules/api/sparse.toml), run
against torch: fixtures/programs/sparse_coo.py prints products, densified values and the losses of
a step through a sparse product; the converted program prints the same."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from msmigrate import convert_source
from test_values_change_type import _outputs, _same_line


@pytest.mark.framework
def test_sparse_programs_compute_torch_values(tmp_path):
    src = FIXTURES / "programs" / "sparse_coo.py"
    result = convert_source(src.read_text(), src.name)
    assert not result.diagnostics, result.diagnostics
    want, got = _outputs(src, result.code, tmp_path)
    assert len(want) == 8 and len(got) == 8, (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


def test_inferred_size_from_an_expression_is_marked():
    """Without size= the values would be evaluated twice (twice random): marked instead."""
    result = convert_source("import torch\ni = torch.tensor([[0, 1]])\ns = torch.sparse_coo_tensor(i, torch.randn(2))\n",
                            "m.py")
    assert any(d.code == "MSC102" and "size=" in d.message for d in result.diagnostics)
