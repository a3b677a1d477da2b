"""torch.distributed -> mindspore.communication + data-parallel context."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible


def init_process_group(site):
    """init_process_group(backend) -> communication.init() and the data-parallel context that
    makes gradients_mean all-reduce match DDP's averaging. The backend is MindSpore's choice
    (HCCL on Ascend, NCCL on GPU, MCCL on CPU); run the program with `msrun`."""
    site.after(site.stmt("{ctx}(parallel_mode={mode}, gradients_mean=True)",
                         ctx=site.ref("mindspore.set_auto_parallel_context"),
                         mode=site.ref("mindspore.ParallelMode.DATA_PARALLEL")))
    site.flag("review", "launch with `msrun --worker_num=N --local_worker_num=N "
                        "--master_port=PORT --join=True script.py` instead of torchrun")
    read = sorted(set(re.findall(r"""["'](RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE)["']""", site.rw.module_code)))
    if read:
        site.flag("review", f"the program reads torchrun's {', '.join(read)} from the environment; msrun sets "
                            f"RANK_ID, RANK_SIZE and DEVICE_ID (the local rank) instead: without the torchrun "
                            f"names each msrun worker would train alone (export them, or read the msrun names)")
    return cst.Call(func=site.ref("mindspore.communication.init"))


def unwrap_ddp(site):
    """MindSpore data parallelism is a context, not a wrapper: the model is used as it is, and
    the compiled training step all-reduces the gradients (when communication was initialized,
    as torch's wrapper needs its process group)."""
    if not site.is_call:
        return _no_wrapper(site)
    site.flag("review", "DistributedDataParallel copies rank 0's initial parameters to every "
                        "rank; MindSpore does not: seed all ranks alike (ms.set_seed) or load one "
                        "checkpoint everywhere")
    module = site.arg("module")
    return module if module is not None else site.node


def true(site):
    return cst.Name("True")


def unwrap_data_parallel(site):
    """nn.DataParallel splits a batch over the GPUs of one process: on MindSpore's one device it
    is the model itself, and no gradient is reduced."""
    if not site.is_call:
        return _no_wrapper(site)
    module = site.arg("module")
    return module if module is not None else site.node


def initialized(site):
    """dist.is_initialized(): whether communication.init() ran (a script run as one process
    skips it, and every get_rank() behind this test)."""
    return site.expr("{c}.GlobalComm.INITED", c=site.ref("mindspore.communication"))


def distributed_sampler(site):
    """DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last) ->
    ds.DistributedSampler(num_shards, shard_id, shuffle): the same rank::world interleaving,
    padded the same way; the dataset goes to the loader's GeneratorDataset."""
    shards = site.arg("num_replicas") or site.expr("{c}.get_group_size()", c=site.ref("mindspore.communication"))
    shard = site.arg("rank") or site.expr("{c}.get_rank()", c=site.ref("mindspore.communication"))
    shuffle = site.arg("shuffle", cst.Name("True"))
    if site.has("drop_last") and site.code(site.arg("drop_last")) != "False":
        site.flag("review", f"{site.qualname}: drop_last: MindSpore pads every shard to the same length "
                            f"(torch's drop_last=False); drop the last incomplete round by hand")
    if site.code(shuffle) != "False":
        site.flag("review", f"{site.qualname}: the shuffled order comes from MindSpore's seed "
                            f"(mindspore.dataset.config.set_seed), not torch's seed + epoch")
    return site.expr("{S}(num_shards={n}, shard_id={r}, shuffle={s})",
                     S=site.ref("mindspore.dataset.DistributedSampler"), n=shards, r=shard, s=shuffle)


def sampler_set_epoch(site):
    """sampler.set_epoch(e) on a converted DistributedSampler: MindSpore's sampler has no epoch
    (its shuffled order follows the dataset seed); the call goes. Other classes' set_epoch stay."""
    name = site.code(site.receiver) if site.receiver is not None else ""
    code = site.rw.module_code
    created = rf"(?m)^\s*{re.escape(name)}\s*=[^\n]*\bDistributedSampler\s*\("
    # `train_loader.sampler.set_epoch(e)`: a loader's sampler, in a file that builds DistributedSamplers
    of_loader = name.endswith(".sampler") and re.search(r"\bDistributedSampler\s*\(", code)
    if not name or not (re.search(created, code) or of_loader):
        return site.node
    return site.REMOVED


def shared_model(site):
    """model.share_memory(): for hogwild workers in other processes; MindSpore cannot share a
    Cell's parameters between processes, and in one process they are shared already."""
    site.flag("review", f"{site.qualname}: MindSpore cannot share a network between processes; the workers "
                        f"of this program run in this process (see torch.multiprocessing.Process)")
    return site.receiver


def sequential_process(site):
    """mp.Process(target=f, args=a, kwargs=k) (hogwild workers) -> an object whose start() runs
    f(*a, **k) in this process and whose join() returns at once: the workers train the shared
    model one after another. Concurrent threads instead would compile the same steps at once,
    which MindSpore 2.10 does not support."""
    target = site.arg("target")
    if target is None or site.has("group"):
        raise Unconvertible("a Process without target=: run its work in this process by hand", "manual")
    call = [cst.Arg(target)]
    if site.has("args"):
        call.append(cst.Arg(site.arg("args"), star="*"))
    if site.has("kwargs"):
        call.append(cst.Arg(site.arg("kwargs"), star="**"))
    site.flag("review", f"{site.qualname}: MindSpore cannot share a network between processes: each worker "
                        f"runs in this process when started, one after another (hogwild's updates, in sequence)")
    start = cst.Call(func=site.ref("functools.partial"), args=_with_commas(call))
    return site.expr("{ns}(start={start}, join=lambda timeout=None: None, is_alive=lambda: False, exitcode=0)",
                     ns=site.ref("types.SimpleNamespace"), start=start)


def _with_commas(args: list) -> list:
    return [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]] + args[-1:]


def _no_wrapper(site):
    """The wrapper class as a value (`isinstance(model, DDP)`, `type(m) is DDP`): converted
    models are never wrapped, so the empty tuple, which no object is an instance of."""
    site.flag("review", f"{site.qualname}: models are not wrapped in MindSpore: isinstance(x, ()) is always "
                        f"False, so the unwrapped branch runs")
    return cst.Tuple([])


def no_sync(site):
    """`with model.no_sync():` (skip DDP's all-reduce on accumulation micro-steps): the converted
    step reduces the gradients of every micro-step instead, which sums to the same mean."""
    return site.expr("{n}()", n=site.ref("contextlib.nullcontext"))
