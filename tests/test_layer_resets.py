"""torch layers' reset_parameters() / reset_running_stats() and the `hasattr(layer,
"reset_parameters")` guard of a k-fold reset: MindSpore's layers have neither method, so the
guard was silently False (every fold trained on the last one's weights) and the calls raised.
Converted, fixtures/programs/layer_resets.py prints what torch prints: values within each
layer's init bound and spanning it, exact ones / zeros, the padding row, reset statistics."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from msmigrate import convert_source
from test_values_change_type import _outputs, _same_line


@pytest.mark.framework
def test_layers_reset_as_torch_resets_them(tmp_path):
    src = FIXTURES / "programs" / "layer_resets.py"
    result = convert_source(src.read_text(), src.name)
    assert not result.diagnostics, [d.to_text() for d in result.diagnostics]
    assert "msmigrate_resets_parameters(layer)" in result.code
    want, got = _outputs(src, result.code, tmp_path)
    assert len(want) == 10 and len(got) == len(want), (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


def test_own_methods_and_super_calls():
    code = ("import torch.nn as nn\n"
            "class Block(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n"
            "        self.reset_parameters()\n"
            "    def reset_parameters(self):\n        self.fc.reset_parameters()\n"
            "class Wide(nn.Linear):\n"
            "    def reset_parameters(self):\n        super().reset_parameters()\n"
            "ok = hasattr(Block(), 'reset_parameters'), hasattr(Block(), name)\n")
    out = convert_source(code, "m.py").code
    assert "msmigrate_reset_parameters(self.fc)" in out
    assert "        self.reset_parameters()" in out and "super().reset_parameters()" in out   # left as written
    assert "msmigrate_resets_parameters(Block()" in out and "hasattr(Block()" in out
    assert "def reset_parameters(self):" in out


def test_converting_the_conversion_changes_nothing():
    """The generated helpers call the methods they stand for (`cell.reset_running_stats()` when
    the object has one): converting the converted file must not rewrite them (torch's own
    swa_utils.py, in the corpus idempotence check, grew a helper each time)."""
    src = (FIXTURES / "programs" / "layer_resets.py").read_text()
    once = convert_source(src, "layer_resets.py").code
    assert convert_source(once, "layer_resets.py").code == once
