"""msmigrate: PyTorch to MindSpore migration (converter, static-graph lint, numerical parity).

Public API::

    from msmigrate import convert_source
    result = convert_source(torch_code, path="train.py")
    result.code, result.diagnostics, result.conversions

Importing this package never imports torch or mindspore.
"""
__version__ = "0.1.0"

from msmigrate.diagnostics import Diagnostic, InputError  # noqa: E402

__all__ = ["__version__", "convert_source", "ConversionResult", "Diagnostic", "InputError"]


def __getattr__(name: str):
    # the converter (and libcst, ~0.2 s) loads on first use: `msmigrate --version` and
    # `msmigrate lint` do not need it
    if name in ("convert_source", "ConversionResult"):
        from msmigrate import engine
        return getattr(engine, name)
    raise AttributeError(f"module 'msmigrate' has no attribute {name!r}")
