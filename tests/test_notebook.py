""".ipynb notebooks: code cells converted as one program, cell boundaries, IPython lines,
markdown and outputs kept, nbformat's JSON conventions, diagnostics at cell N line L."""
from __future__ import annotations

import copy
import json
import re

from click.testing import CliRunner

from msmigrate.cli import cli


def code_cell(source, outputs=(), count=None):
    return {"cell_type": "code", "execution_count": count, "metadata": {}, "outputs": list(outputs),
            "source": source}


def notebook(*cells):
    return {"cells": list(cells),
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def lines(text):
    return text.splitlines(keepends=True)


STREAM = {"name": "stdout", "output_type": "stream", "text": ["Linear(in_features=2, out_features=3) — ok\n"]}
NB = notebook(
    {"cell_type": "markdown", "metadata": {}, "source": lines("# Training with `torch.nn.Linear`\nünïcode")},
    code_cell(lines("%matplotlib inline\nimport torch\nimport torch.nn as nn\n!pip install tqdm"), count=1),
    code_cell(lines("%%bash\necho torch.nn.Linear"), count=2),
    code_cell(lines("layer = nn.Linear(2, 3)\nfiles = !ls\nlayer?\nprint(layer)"), [STREAM], count=3),
    code_cell(lines("def f(x):\n    %time y = x\n    return torch.frobnicate(x)"), count=4),
    {"cell_type": "raw", "metadata": {}, "source": ["nn.Linear(1, 1)"]},
)


def convert(*args):
    result = CliRunner().invoke(cli, ["convert", "-j", "1", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_cells_converted_as_one_program(tmp_path):
    src = tmp_path / "train.ipynb"
    src.write_text(json.dumps(NB, indent=1, ensure_ascii=False) + "\n")
    before = src.read_bytes()
    result = convert(src, "-o", tmp_path / "out", "--no-lint")
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "out" / "train.ipynb").read_text()
    # nbformat's conventions: indent 1, non-ASCII kept, one trailing newline
    assert text == json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n"
    assert "ünïcode" in text and "— ok" in text
    nb = json.loads(text)
    cells = nb["cells"]
    assert len(cells) == len(NB["cells"])
    # the import rewritten in cell 2 serves the layer in cell 4; IPython lines untouched
    # torch.frobnicate is left: the first cell starts with the block that stops the notebook there
    assert cells[1]["source"][0].startswith("# msmigrate: MSC108 ")
    assert cells[1]["source"][-4:] == ["%matplotlib inline\n", "from mindspore import nn\n", "import torch\n",
                                       "!pip install tqdm"]
    assert cells[3]["source"][:4] == ["layer = nn.Dense(2, 3)\n", "layer.set_train(True)\n", "files = !ls\n",
                                      "layer?\n"]
    assert cells[4]["source"][1] == "    %time y = x\n"
    # markdown, raw, cell magics, outputs, counts and metadata as they were
    for k in (0, 2, 5):
        assert cells[k] == NB["cells"][k]
    assert cells[3]["outputs"] == [STREAM] and cells[3]["execution_count"] == 3
    assert nb["metadata"] == NB["metadata"]
    # the diagnostic names the cell (5th of the notebook) and the line inside it
    assert f"{src}:cell 5:3:12: MSC104 torch.frobnicate" in result.stderr
    assert src.read_bytes() == before


def test_unchanged_notebook_is_byte_identical(tmp_path):
    src = tmp_path / "plot.ipynb"
    nb = notebook(code_cell(["import numpy as np\n", "%timeit np.ones(3)"]))
    src.write_text(json.dumps(nb, indent=2, sort_keys=True))     # not nbformat's style, no newline
    result = convert(src, "-o", tmp_path / "out")
    assert result.exit_code == 0
    assert (tmp_path / "out" / "plot.ipynb").read_bytes() == src.read_bytes()
    assert "0 files converted" in result.stderr


def test_diff_mode_and_write(tmp_path):
    src = tmp_path / "nb.ipynb"
    nb = notebook(code_cell("import torch.nn as nn\nm = nn.Linear(1, 1)"))   # source as one string
    src.write_text(json.dumps(nb, indent=1) + "\n")
    diff = convert(src)
    assert diff.exit_code == 0 and '+   "source": "from mindspore import nn' in diff.stdout
    assert json.loads(src.read_text()) == nb
    assert convert(src, "-w").exit_code == 0
    out = json.loads(src.read_text())
    assert out["cells"][0]["source"] == "from mindspore import nn\nm = nn.Dense(1, 1)\nm.set_train(True)"


def test_notebook_uses_models_from_the_project(tmp_path):
    (tmp_path / "models.py").write_text("import torch.nn as nn\n\n\nclass Net(nn.Module):\n"
                                        "    def forward(self, x):\n        return x\n")
    nb = notebook(code_cell(["from models import Net\n", "import torch\n"]),
                  code_cell(["net = Net()\n", "out = net(torch.ones(2))"]))
    (tmp_path / "demo.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
    result = convert(tmp_path, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    cells = json.loads((tmp_path / "out" / "demo.ipynb").read_text())["cells"]
    assert cells[1]["source"] == ["net = Net()\n", "net.set_train(True)\n", "out = net(ops.ones(2))"]


def test_syntax_error_names_the_cell(tmp_path):
    nb = notebook(code_cell(["import torch\n"]), {"cell_type": "markdown", "metadata": {}, "source": ["x"]},
                  code_cell(["x = 1\n", "y = (\n"]))
    src = tmp_path / "bad.ipynb"
    src.write_text(json.dumps(nb))
    before = src.read_bytes()
    result = convert(src, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert re.search(rf"^{re.escape(str(src))}:cell 3:2:\d+: error: syntax error: '\(' was never closed "
                     rf"\(fix the syntax error", result.stderr, re.M)
    assert not (tmp_path / "out" / "bad.ipynb").exists()
    assert src.read_bytes() == before


def test_not_json_and_other_kernels(tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [')
    r_nb = copy.deepcopy(notebook(code_cell(["library(torch)\n", "x <- torch_tensor(1)"])))
    r_nb["metadata"]["kernelspec"] = {"language": "R", "name": "ir"}
    (tmp_path / "r.ipynb").write_text(json.dumps(r_nb))
    result = convert(tmp_path, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert re.search(r"broken\.ipynb:1:\d+: error: not a valid notebook: .*\(repair the JSON", result.stderr)
    assert (tmp_path / "out" / "r.ipynb").read_bytes() == (tmp_path / "r.ipynb").read_bytes()


def test_python_lines_that_look_like_ipython(tmp_path):
    source = ['import torch.nn as nn\n', 'msg = ("%d layers"\n', '       % 2)\n', 'def f():\n',
              '    """Which layer?\n', '    %s\n', '    """\n', '    return nn.ReLU()\n', 'help?']
    src = tmp_path / "nb.ipynb"
    src.write_text(json.dumps(notebook(code_cell(source))))
    assert convert(src, "-w").exit_code == 0
    out = json.loads(src.read_text())["cells"][0]["source"]
    assert out == ['from mindspore import nn\n', *source[1:7], '    return nn.ReLU()\n', 'help?']


def test_brackets_in_shell_and_magic_lines_do_not_open_python_brackets(tmp_path):
    source = ['import torch\n', '!echo (\n', 'files = !ls [\n', '%time f(\n', 'x = torch.zeros(2)\n',
              'z = (x %\n', '     2)']
    src = tmp_path / "nb.ipynb"
    src.write_text(json.dumps(notebook(code_cell(source))))
    result = convert(src, "-w")
    assert result.exit_code == 0, result.stderr
    out = json.loads(src.read_text())["cells"][0]["source"]
    assert out == ['from mindspore import ops\n', *source[1:4], 'x = ops.zeros(2)\n', *source[5:]]


def test_notebook_function_calling_the_notebooks_own_class(tmp_path):
    # a notebook's function whose call names a class or function of the notebook itself: the name
    # is looked up at the notebook's place in the tree (crashed with a KeyError on the whole run)
    (tmp_path / "models.py").write_text("import torch.nn as nn\n\n\nclass Net(nn.Module):\n"
                                        "    def forward(self, x):\n        return x\n")
    nb = notebook(code_cell(["from models import Net\n", "import torch\n"]),
                  code_cell(["class Meter:\n", "    pass\n", "\n", "\n", "def make_meter():\n",
                             "    return Meter()\n", "\n", "\n", "def make_net():\n", "    return Net()\n"]),
                  code_cell(["net = make_net()\n", "meter = make_meter()\n", "out = net(torch.ones(2))"]))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "demo.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
    (tmp_path / "demo.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
    result = convert(tmp_path, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    cells = json.loads((tmp_path / "out" / "demo.ipynb").read_text())["cells"]
    assert cells[2]["source"][:2] == ["net = make_net()\n", "net.set_train(True)\n"]
    assert (tmp_path / "out" / "sub" / "demo.ipynb").exists()
