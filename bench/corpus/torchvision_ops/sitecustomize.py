"""Lets the torch originals import torchvision on a machine whose only torchvision wheel is a CUDA build.

That wheel's C extension needs libc10_cuda.so, so it does not load on the CPU torch; torchvision's
datasets and transforms are Python and work without it, but `import torchvision` registers fake
kernels for two of the extension's operators unconditionally and fails when they were never defined.
This defines those two operator schemas (without kernels: a program calling nms() still fails) just
before torchvision is first imported. Only the corpus runner's torch runs get it on PYTHONPATH.
"""
import sys


class _DefineTorchvisionOps:
    def find_spec(self, name, path=None, target=None):
        if name == "torchvision":
            sys.meta_path.remove(self)
            import torch
            if not hasattr(torch.ops.torchvision, "nms"):   # a CPU build of torchvision defines them itself
                lib = torch.library.Library("torchvision", "FRAGMENT")
                for op in ("nms", "qnms"):
                    lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
                sys.modules[__name__].library = lib   # a Library unregisters its operators when collected
        return None   # the ordinary import goes on


sys.meta_path.insert(0, _DefineTorchvisionOps())
