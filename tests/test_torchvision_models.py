"""torchvision.models has no MindSpore counterpart bundled: the file stops at its top with the fix
(mindcv's create_model under the same name), for every way the model is named."""
from __future__ import annotations

import pytest

from msmigrate import convert_source


@pytest.mark.parametrize("src", [
    "import torchvision\nnet = torchvision.models.resnet18(pretrained=True)\n",
    "from torchvision import models\nnet = models.vgg16(weights=None)\n",
    "from torchvision.models import densenet121\nnet = densenet121()\n",
])
def test_torchvision_models_stop_the_file_with_the_fix(src):
    result = convert_source(src, "m.py")
    marked = [d for d in result.diagnostics if d.code == "MSC102"]
    assert len(marked) == 1 and "mindcv.create_model(" in marked[0].message, result.diagnostics
    assert "MSC108" in {d.code for d in result.diagnostics}
    name = marked[0].message.split("create_model('")[1].split("'")[0]
    assert name in src
