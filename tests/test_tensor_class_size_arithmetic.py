"""`torch.Tensor(3 * K - 1)` (tonyduan/normalizing-flows' spline flows: `nn.Parameter(torch.Tensor(
3 * K - 1))`): one argument that is arithmetic over names and int literals is a size when it is an
int, as `torch.Tensor(n)` is; it was taken for data (a 0-d tensor holding 14 where torch makes a
vector of 14). Which one is read at run time; a list repeated by the same arithmetic stays data.
Converted, the program prints torch's shapes and values."""
from __future__ import annotations

import pytest

from isolated import run_script
from msmigrate import convert_source

PROGRAM = '''
import json
import torch
import torch.nn as nn


class Spline(nn.Module):
    def __init__(self, K=5, dim=4):
        super().__init__()
        self.init_param = nn.Parameter(torch.Tensor(3 * K - 1))
        self.mid = nn.Parameter(torch.Tensor(dim // 2 + 1))
        nn.init.constant_(self.init_param, 0.5)
        nn.init.constant_(self.mid, 0.25)


m = Spline()
pair = [1.0, 2.0]
data = torch.Tensor(pair * 2)
print(json.dumps([list(m.init_param.shape), float(m.init_param.sum()), list(m.mid.shape),
                  data.tolist()]))
'''


@pytest.mark.framework
def test_tensor_of_int_arithmetic_is_a_size():
    result = convert_source(PROGRAM, "spline.py")
    assert "isinstance(3 * K - 1, int)" in result.code
    assert run_script(result.code) == run_script(PROGRAM) == [[14], 7.0, [3], [1.0, 2.0, 1.0, 2.0]]
