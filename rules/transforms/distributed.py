"""torch.distributed -> mindspore.communication + data-parallel context."""
from __future__ import annotations

import libcst as cst


def init_process_group(site):
    """init_process_group(backend) -> communication.init() and the data-parallel context that
    makes gradients_mean all-reduce match DDP's averaging. The backend is MindSpore's choice
    (HCCL on Ascend, NCCL on GPU, MCCL on CPU); run the program with `msrun`."""
    site.after(site.stmt("{ctx}(parallel_mode={mode}, gradients_mean=True)",
                         ctx=site.ref("mindspore.set_auto_parallel_context"),
                         mode=site.ref("mindspore.ParallelMode.DATA_PARALLEL")))
    site.flag("review", "launch with `msrun --worker_num=N --local_worker_num=N "
                        "--master_port=PORT --join=True script.py` instead of torchrun")
    return cst.Call(func=site.ref("mindspore.communication.init"))


def unwrap_ddp(site):
    """MindSpore data parallelism is a context, not a wrapper: the model is used as it is, and
    the compiled training step all-reduces the gradients."""
    site.flag("review", "DistributedDataParallel copies rank 0's initial parameters to every "
                        "rank; MindSpore does not: seed all ranks alike (ms.set_seed) or load one "
                        "checkpoint everywhere")
    module = site.arg("module")
    return module if module is not None else site.node


def true(site):
    return cst.Name("True")
