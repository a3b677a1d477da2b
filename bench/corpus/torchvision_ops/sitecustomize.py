"""Lets the torch originals import torchvision on a machine whose only torchvision wheel is a CUDA build.

That wheel's C extension needs libc10_cuda.so, so it does not load on the CPU torch; torchvision's
datasets and transforms are Python and work without it, but `import torchvision` registers fake
kernels for two of the extension's operators unconditionally and fails when they were never defined.
This defines those two operator schemas (without kernels: a program calling nms() still fails) just
before torchvision is first imported. Only the corpus runner's torch runs get it on PYTHONPATH.

It also lets torchvision's CIFAR10/CIFAR100 read the synthetic files of an entry's `prepare`
(bench/corpus/synth.py's cifar10_batches): they are in the original format, but torchvision checks
each file's MD5 against the real release's; in torchvision.datasets.cifar that check becomes "the
file exists" (nothing else reads differently).
"""
import os
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


class _CifarFilesExist:
    """After torchvision.datasets.cifar is executed, its check_integrity(path, md5) only asks that the
    file exist (the synthetic batches cannot have the real release's MD5)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torchvision.datasets.cifar":
            return None
        sys.meta_path.remove(self)
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.check_integrity = lambda fpath, md5=None: os.path.isfile(fpath)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _DefineTorchvisionOps())
sys.meta_path.insert(0, _CifarFilesExist())
