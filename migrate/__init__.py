"""msmigrate: PyTorch to MindSpore migration (converter, static-graph lint, numerical parity).

Public API::

    from msmigrate import convert_source
    result = convert_source(torch_code, path="train.py")
    result.code, result.diagnostics, result.conversions

Importing this package never imports torch or mindspore.
"""
__version__ = "0.1.0"

from msmigrate.diagnostics import Diagnostic, InputError  # noqa: E402
from msmigrate.engine import ConversionResult, convert_source  # noqa: E402

__all__ = ["__version__", "convert_source", "ConversionResult", "Diagnostic", "InputError"]
