"""Distributions built from logits: MindSpore's take probabilities only."""
from __future__ import annotations

import libcst as cst

# logits -> probabilities, as torch normalises them (softmax over the last axis; sigmoid)
FROM_LOGITS = {"Categorical": "{f}({x}, -1)", "Bernoulli": "{f}({x})"}
LOGIT_OPS = {"Categorical": "@mindspore.ops.softmax", "Bernoulli": "@mindspore.ops.sigmoid"}
# draws in torch's dtype where MindSpore's default differs (Bernoulli: float, not int32)
SAMPLE_DTYPE = {"Bernoulli": "@mindspore.float32"}


def probs_or_logits(site):
    kind = site.record.target.rsplit(".", 1)[1]
    probs = site.arg("probs")
    if probs is None and site.arg("logits") is not None:
        probs = site.expr(FROM_LOGITS[kind], f=LOGIT_OPS[kind], x=site.arg("logits"))
    if probs is None:
        return site.call(site.record.target, [])
    args = [cst.Arg(probs)]
    if kind in SAMPLE_DTYPE:
        args.append(cst.Arg(site.expr("{d}", d=SAMPLE_DTYPE[kind]), keyword=cst.Name("dtype"),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
    return site.call(site.record.target, args)
