"""Objects a constructor put into a dict, list, tuple, ModuleDict or ModuleList literal are
known by their element (`criteria["cls"]`, `losses[0]`): called through it, they convert as a
call of that object (CrossEntropyLoss's labels cast to int32; the run against torch is
fixtures/programs/train_losses_in_containers.py in test_parity_programs). A name bound again
holds none of its old elements (where the engine visits it: a statement naming torch)."""
from __future__ import annotations

from msmigrate import convert_source

HEAD = "import torch\nimport torch.nn as nn\nout = torch.randn(4, 3)\ny = torch.randint(0, 3, (4,))\n"


def _code(body: str) -> str:
    return convert_source(HEAD + body, "m.py").code


def test_elements_of_literals_and_module_containers_are_their_objects():
    out = _code("c = {'cls': nn.CrossEntropyLoss(), 'aux': nn.NLLLoss()}\n"
                "l = (nn.CrossEntropyLoss(),)\nm = nn.ModuleList([nn.MSELoss(), nn.CrossEntropyLoss()])\n"
                "a = c['cls'](out, y) + c[\"aux\"](out, y) + l[0](out, y) + m[1](out, y)\n")
    assert out.count("y.astype(ms.int32)") == 4, out


def test_a_rebound_name_and_unknown_keys_keep_the_call_as_written():
    out = _code("c = {'cls': nn.CrossEntropyLoss()}\nc = {'cls': nn.MSELoss()}\nb = [nn.CrossEntropyLoss()]\n"
                "a = c['cls'](out, y)\nz = b[1](out, y)\nk = 'cls'\nw = b[k](out, y)\n")
    assert "astype" not in out, out
