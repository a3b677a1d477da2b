"""torch.distributions -> mindspore.nn.probability.distribution (rules/api/distributions.toml).

MindSpore's objects answer log_prob / entropy / cdf / sample under torch's names; what differs:
- construction: MindSpore's Categorical/Bernoulli/Geometric take probabilities only (logits are
  normalised here as torch does); draws come in torch's dtype where MindSpore's default differs;
- torch's properties are MindSpore methods (`d.mean` -> `d.mean()`, `d.stddev` -> `d.sd()`,
  `d.variance` -> `d.var()`), torch's parameters (`d.loc`, `d.probs`) are `d.get_dist_args()`;
- `rsample` is `sample` where MindSpore's draw is a differentiable function of the parameters;
- `kl_divergence(p, q)` is `p.kl_loss(<q's family>, *<q's parameters>)`.
The families and what MindSpore 2.10 lacks for each are in FAMILIES; the per-API suite
(tests/api_suite/cases/distributions.toml) runs each form under both frameworks.
"""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible

# logits -> probabilities, as torch normalises them (softmax over the last axis; sigmoid)
FROM_LOGITS = {"Categorical": "{f}({x}, -1)", "Bernoulli": "{f}({x})", "Geometric": "{f}({x})"}
LOGIT_OPS = {"Categorical": "@mindspore.ops.softmax", "Bernoulli": "@mindspore.ops.sigmoid",
             "Geometric": "@mindspore.ops.sigmoid"}
# draws in torch's dtype where MindSpore's default differs (Bernoulli, Geometric: float, not int32)
SAMPLE_DTYPE = {"Bernoulli": "@mindspore.float32", "Geometric": "@mindspore.float32"}


class Family:
    def __init__(self, params, rsample=False, lacks=(), no_kl=False, sample_cast=None,
                 generated=False, event=False, rsample_lacks=None, differs=()):
        self.differs = dict(differs)   # torch property -> how the converted value differs (flagged)
        self.rsample_lacks = rsample_lacks   # why rsample is not converted (said in the flag)
        self.event = event            # draws are vectors over the first parameter's last axis
        self.generated = generated    # a class of rules/generated/distributions.py: torch's
                                      # parameter attributes, MindSpore's method names
        self.params = params          # torch parameter names, in the order of get_dist_args()
        self.rsample = rsample        # MindSpore's sample is differentiable in the parameters
        self.lacks = dict(lacks)      # torch property -> why MindSpore's differs
        self.no_kl = no_kl
        self.sample_cast = sample_cast   # torch's dtype of draws, where MindSpore's differs


GAMMA_DRAWS = ("its draws come from mindspore.ops.random_gamma, which has no gradient with respect to "
               "the concentration (torch's rsample is differentiable)")
NO_RSAMPLE = "torch's has none either (NotImplementedError): use sample"
NONE_IN_TORCH = {p: "torch's has none either (NotImplementedError)" for p in ("mean", "stddev", "variance", "mode")}
NAN_MODE = "torch gives nan (the mode is not unique): MindSpore raises NotImplementedError"
CLAMPED_MODE = ("torch gives 0 where the concentration is below 1 (the density's maximum at the "
                "boundary): MindSpore gives nan there")
FAMILIES = {
    "Normal": Family(("loc", "scale"), rsample=True),
    "Uniform": Family(("low", "high"), rsample=True, lacks={"mode": NAN_MODE}),
    "Exponential": Family(("rate",), rsample=True),
    "Gamma": Family(("concentration", "rate"), lacks={"mode": CLAMPED_MODE}),
    "Beta": Family(("concentration1", "concentration0"), lacks={"mode": CLAMPED_MODE}),
    "Poisson": Family(("rate",), no_kl=True),
    "Geometric": Family(("probs",)),
    "LogNormal": Family(("loc", "scale")),
    "Gumbel": Family(("loc", "scale"), rsample=True),
    "Cauchy": Family(("loc", "scale"), rsample=True,
                     lacks={p: "torch gives nan (undefined for Cauchy): MindSpore raises ValueError"
                            for p in ("mean", "stddev", "variance")}),
    "Categorical": Family(("probs",), sample_cast="@mindspore.int64",
                          lacks={p: "torch gives nan (a category has no order): MindSpore computes one"
                                 for p in ("mean", "stddev", "variance")}),
    "Independent": Family((), rsample=True, generated=True),
    "MultivariateNormal": Family(("loc", "covariance_matrix", "precision_matrix", "scale_tril"),
                                 rsample=True, generated=True, event=True),
    "Laplace": Family(("loc", "scale"), rsample=True, generated=True),
    "HalfNormal": Family(("scale",), rsample=True, generated=True, no_kl=True),
    "OneHotCategorical": Family(("probs", "logits"), generated=True, event=True),
    "Dirichlet": Family(("concentration",), generated=True, event=True,
                        lacks={"mode": "torch's Dirichlet.mode (concentrations below 1): convert by hand"}),
    "TransformedDistribution": Family((), rsample=True, generated=True, no_kl=True,
                                      lacks={p: "torch's TransformedDistribution has none either (NotImplementedError)"
                                             for p in ("mean", "stddev", "variance", "mode")}),
    "StudentT": Family(("df", "loc", "scale"), generated=True, no_kl=True),
    "Chi2": Family(("df",), generated=True, no_kl=True),
    "Binomial": Family(("total_count", "probs", "logits"), generated=True, no_kl=True),
    "Multinomial": Family(("probs", "total_count", "logits"), generated=True, event=True, no_kl=True,
                          lacks={"mode": "torch's Multinomial.mode: convert by hand"}),
    "Bernoulli": Family(("probs",), lacks={"mode": "torch gives nan where probs is 0.5; MindSpore's "
                                                      "Bernoulli.mode raises on CPU"}),
    "Pareto": Family(("scale", "alpha"), rsample=True, generated=True),
    "Weibull": Family(("scale", "concentration"), rsample=True, generated=True, no_kl=True),
    "HalfCauchy": Family(("scale",), rsample=True, generated=True, no_kl=True),
    "NegativeBinomial": Family(("total_count", "probs", "logits"), generated=True, no_kl=True,
                               rsample_lacks=NO_RSAMPLE),
    "FisherSnedecor": Family(("df1", "df2"), generated=True, no_kl=True, rsample_lacks=GAMMA_DRAWS),
    "InverseGamma": Family(("concentration", "rate"), generated=True, no_kl=True, rsample_lacks=GAMMA_DRAWS),
    "Kumaraswamy": Family(("concentration1", "concentration0"), rsample=True, generated=True, no_kl=True,
                          differs={"mode": "torch 2.x gives nan where concentration0 > 1 (its formula takes "
                                           "log(1 - concentration0)); the converted code gives the true mode "
                                           "((a - 1) / (a * b - 1)) ** (1 / a) (nan where a or b is below 1)"}),
    "ContinuousBernoulli": Family(("probs", "logits"), rsample=True, generated=True,
                                  lacks={"mode": "torch's ContinuousBernoulli has none either (NotImplementedError)"}),
    "RelaxedBernoulli": Family(("probs", "logits", "temperature"), rsample=True, generated=True, no_kl=True,
                               lacks=NONE_IN_TORCH),
    "RelaxedOneHotCategorical": Family(("probs", "logits", "temperature"), rsample=True, generated=True,
                                       event=True, no_kl=True, lacks=NONE_IN_TORCH),
    "OneHotCategoricalStraightThrough": Family(("probs", "logits"), rsample=True, generated=True, event=True),
    "LowRankMultivariateNormal": Family(("loc", "cov_factor", "cov_diag", "covariance_matrix",
                                         "precision_matrix", "scale_tril"), rsample=True, generated=True,
                                        event=True),
    "MixtureSameFamily": Family((), generated=True, no_kl=True, rsample_lacks=NO_RSAMPLE,
                                lacks={"mode": "torch's MixtureSameFamily has none either (NotImplementedError)"}),
    # draws on the simplex of loc.shape[-1] + 1 values: the shapes are not the parameters'
    "LogisticNormal": Family((), rsample=True, generated=True, no_kl=True, lacks=NONE_IN_TORCH),
    "VonMises": Family(("loc", "concentration"), generated=True, no_kl=True, rsample_lacks=NO_RSAMPLE),
}
# torch's kl_divergence pairs across two families that the first's kl_loss computes (both classes
# report "MultivariateNormal" with loc and scale_tril)
KL_ACROSS = {("LowRankMultivariateNormal", "MultivariateNormal"), ("MultivariateNormal", "LowRankMultivariateNormal")}
PROPERTIES = {"mean": "{x}.mean()", "stddev": "{x}.sd()", "variance": "{x}.var()", "mode": "{x}.mode()"}


def _family(site) -> tuple[str, Family]:
    kind = _kind(site.instance)
    if kind not in FAMILIES:
        raise Unconvertible(f"{site.qualname}: the distribution's family is not known here: convert "
                            f"this use by hand", "review")
    return kind, FAMILIES[kind]


def _kind(inst) -> str | None:
    """`Normal` for an object made by torch.distributions.Normal (or normal.Normal)."""
    return inst.torch.rsplit(".", 1)[1] if inst is not None and inst.torch.startswith("torch.distributions.") \
        else None


def _define(site, name: str) -> cst.Name:
    """rules/generated/distributions.py's `name` copied into the file, after the helpers and base
    classes it names (the file runs top-down); a reference to it."""
    import inspect
    import textwrap

    from msmigrate.rules.generated import distributions as generated

    obj = getattr(generated, name)
    source = _file_imports(site.rw.imports, textwrap.dedent(inspect.getsource(obj)))
    for used in dict.fromkeys(re.findall(r"\bmsmigrate_\w+", source)):
        if used != name and hasattr(generated, used):
            _define(site, used)
    return site.rw.imports.define(name, source)


def _file_imports(plan, source: str) -> str:
    """The imports inside a generated definition's functions made the file's (`plan`: its
    ImportPlan), every name they bind rewritten to the file's reference: MindSpore's compiled code
    rejects an import statement ("Unsupported statement 'Import'"), and a distribution's log_prob
    is called in a compiled construct (a flow's prior)."""
    import ast

    tree = ast.parse(source)
    bound, drop = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node not in tree.body \
                and not getattr(node, "level", 0):
            for alias in node.names:
                if isinstance(node, ast.Import):
                    name = alias.asname or alias.name.split(".")[0]
                    bound[name] = alias.name if alias.asname else name
                else:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            drop.update(range(node.lineno, node.end_lineno + 1))
    if not bound:
        return source
    code = {name: cst.Module([]).code_for_node(plan.ref(qualname)) for name, qualname in bound.items()}
    lines = [line for i, line in enumerate(source.splitlines(keepends=True), 1) if i not in drop]
    return re.sub(r"(?<![\w.])(%s)(?!\w)(?!\s*=[^=])" % "|".join(map(re.escape, code)),
                  lambda m: code[m.group(1)], "".join(lines))


def generated_class(site):
    """A torch distribution MindSpore lacks: the class of rules/generated/distributions.py of its
    name, copied into the file, called with torch's arguments."""
    return site.node.with_changes(func=_define(site, "msmigrate_" + site.record.torch.rsplit(".", 1)[1]))


def probs_or_logits(site):
    kind = site.record.target.rsplit(".", 1)[1]
    probs = site.arg("probs")
    if probs is None and site.arg("logits") is not None:
        probs = site.expr(FROM_LOGITS[kind], f=LOGIT_OPS[kind], x=site.arg("logits"))
    elif probs is not None and kind == "Categorical" and not _is_softmax(site):
        # torch divides the weights by their sum; MindSpore raises unless they sum to one
        probs = site.expr("{p} / {p}.sum(-1, keepdims=True)", p=probs)
    if probs is None:
        return site.call(site.record.target, [])
    args = [cst.Arg(probs)]
    if kind in SAMPLE_DTYPE:
        args.append(_keyword("dtype", site.expr("{d}", d=SAMPLE_DTYPE[kind])))
    return site.call(site.record.target, args)


def _is_softmax(site) -> bool:
    """The probabilities are a softmax (already normalised): the torch argument was one."""
    from msmigrate.engine import _bind

    original = site.rw.original_call
    arg = _bind(site.record, original.args)[0].get("probs") if original is not None else None
    if arg is None or not isinstance(arg.value, cst.Call):
        return False
    func = site.rw.scopes.resolve(arg.value.func) or ""
    return func in ("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax") or (
        isinstance(arg.value.func, cst.Attribute) and arg.value.func.attr.value == "softmax")


def _keyword(name, value):
    return cst.Arg(value, keyword=cst.Name(name),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def prop(site):
    """`d.mean` / `d.stddev` / `d.variance` / `d.mode`: MindSpore's methods."""
    name = site.record.method_name
    kind, family = _family(site)
    if name in family.lacks:
        raise Unconvertible(f"{kind}.{name}: {family.lacks[name]}", "review")
    out = site.expr(PROPERTIES[name], x=site.receiver)
    if name in family.differs:
        site.flag("review", f"{kind}.{name}: {family.differs[name]}")
    if name == "mode" and family.sample_cast:   # a category, in torch's dtype
        out = site.expr("{d}.astype({t})", d=out, t=family.sample_cast)
    return out


def parameter(site):
    """`d.loc`, `d.probs`...: the parameter from get_dist_args(), broadcast as torch's are."""
    name = site.record.method_name
    kind, family = _family(site)
    if family.generated and name in family.params:   # the generated class's own attribute
        return site.node
    if name == "logits" and "probs" in family.params:
        at = family.params.index("probs")
        # torch's logits: normalised log-probabilities (Categorical), log-odds (the others)
        f = "@mindspore.ops.log" if kind == "Categorical" else "@mindspore.ops.logit"
        return site.expr("{f}({x}.get_dist_args()[%d])" % at, x=site.receiver, f=f)
    if name not in family.params:
        raise Unconvertible(f"{kind} has no parameter {name!r} in MindSpore", "review")
    at = family.params.index(name)
    if len(family.params) == 1:
        return site.expr("{x}.get_dist_args()[%d]" % at, x=site.receiver)
    # torch broadcasts the parameters together (Normal(a, 1.0).scale has a's shape)
    return site.expr("{b}(*{x}.get_dist_args())[%d]" % at, x=site.receiver, b="@mindspore.numpy.broadcast_arrays")


def sample(site):
    """`d.sample(shape)`: MindSpore's `shape=`; draws in torch's dtype (Gamma, Beta, Poisson: by
    msmigrate_gamma_draws, their own sample has no CPU kernel)."""
    kind, family = _family(site)
    rsample = site.record.method_name == "rsample"
    if rsample and family.rsample_lacks:
        raise Unconvertible(f"{kind}.rsample: {family.rsample_lacks}", "review")
    if rsample and not family.rsample:
        raise Unconvertible(f"{kind}.rsample: MindSpore's {kind} draws are not a differentiable function of "
                            f"the parameters (no gradient flows back through them)", "review")
    shape = site.arg("sample_shape")
    if kind in GAMMA_FAMILY:
        name = _define(site, "msmigrate_gamma_draws")
        return site.expr("{f}({x})", f=name, x=site.receiver) if shape is None else \
            site.expr("{f}({x}, {s})", f=name, x=site.receiver, s=shape)
    method = "rsample" if rsample and family.generated else "sample"
    out = site.expr("{x}.%s()" % method, x=site.receiver) if shape is None else \
        site.expr("{x}.%s({s})" % method, x=site.receiver, s=shape)
    if family.sample_cast:
        out = site.expr("{d}.astype({t})", d=out, t=family.sample_cast)
    return out


GAMMA_FAMILY = ("Gamma", "Beta", "Poisson")   # MindSpore's own draws have no CPU kernel


def kl_divergence(site):
    """kl_divergence(p, q) -> p.kl_loss(q.get_dist_type(), *q.get_dist_args()): MindSpore computes
    the KL between two objects of one family only."""
    p, q = site.arg("p"), site.arg("q")
    if p is None or q is None:
        raise Unconvertible("kl_divergence without both distributions", "review")
    from msmigrate.engine import _bind

    original = _bind(site.record, site.rw.original_call.args)[0] if site.rw.original_call is not None else {}
    kinds = [_kind(site.rw._receiver_instance(original[name].value)) if name in original else None
             for name in ("p", "q")]
    if kinds[0] and kinds[1] and kinds[0] != kinds[1] and tuple(kinds) not in KL_ACROSS:
        raise Unconvertible(f"KL between {kinds[0]} and {kinds[1]}: MindSpore's kl_loss is defined "
                            f"between two distributions of one family only", "review")
    if kinds[0] in FAMILIES and FAMILIES[kinds[0]].no_kl:
        raise Unconvertible(f"MindSpore 2.10 has no kl_loss for {kinds[0]}", "review")
    if not (kinds[0] and kinds[1]):
        site.flag("review", "kl_divergence(p, q) -> p.kl_loss(...): MindSpore computes it only between two "
                            "distributions of one family (torch also between some families)")
    return site.expr("{p}.kl_loss({q}.get_dist_type(), *{q}.get_dist_args())", p=p, q=q)


def continuous(site):
    """A distribution of real values: MindSpore's class, built in torch's dtype unless every
    parameter is a number (torch: the default float32). MindSpore keeps float64 parameters in
    float32 (set_param_type): marked where one is visibly float64."""
    from msmigrate.rules.transforms.dtypes import kind
    if any(kind(site.rw, a.value) == "float64" for a in site.node.args):
        site.flag("review", f"{site.qualname}: MindSpore's distributions keep float64 parameters in float32: "
                            "values have float32 precision and entropy/mean/sd/var/mode/kl_loss are float32 "
                            "(torch: float64); compute in float32 or write these by hand")
    call = site.call(site.record.target)
    if site.record.target.rsplit(".", 1)[1] in NO_SCALARS:   # MindSpore: "Input rate can't be scalar"
        call = call.with_changes(args=[a.with_changes(value=site.expr("{t}({v}, {f})", t="@mindspore.Tensor", v=a.value,
                                                                       f="@mindspore.float32"))
                                       if _number(a.value) else a for a in call.args])
    if all(_number(a.value) for a in call.args):
        return call
    return call.with_changes(func=_define(site, "msmigrate_distribution"), args=[cst.Arg(call.func), *call.args])


NO_SCALARS = ("Gamma", "Beta", "Poisson")   # MindSpore's classes that take Tensor parameters only


def _number(node) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def perplexity(site):
    _family(site)
    return site.expr("{exp}({x}.entropy())", exp="@mindspore.ops.exp", x=site.receiver)


def batch_shape(site):
    """The parameters' broadcast shape (without a Categorical's last axis, its categories)."""
    kind, family = _family(site)
    if _own(kind, family, "batch_shape"):
        return site.node
    if family.event:
        return site.expr("{x}.%s.shape[:-1]" % family.params[0], x=site.receiver)
    if family.generated and family.params:
        return site.expr("{x}.%s.shape" % family.params[0], x=site.receiver)
    if not family.params:
        raise Unconvertible(f"{kind}.batch_shape: convert this use by hand", "review")
    shape = site.expr("{b}(*{x}.get_dist_args())[0].shape", x=site.receiver, b="@mindspore.numpy.broadcast_arrays") \
        if len(family.params) > 1 else site.expr("{x}.get_dist_args()[0].shape", x=site.receiver)
    return site.expr("{s}[:-1]", s=shape) if kind == "Categorical" else shape


def event_shape(site):
    """Every family converted here draws scalars (torch.Size([])) but these."""
    kind, family = _family(site)
    if _own(kind, family, "event_shape"):
        return site.node
    if family.event:
        return site.expr("{x}.%s.shape[-1:]" % family.params[0], x=site.receiver)
    if family.generated and not family.params:
        raise Unconvertible(f"{kind}.event_shape: convert this use by hand", "review")
    return site.expr("()")


def _own(kind, family, name) -> bool:
    """The generated class of `kind` defines `name` itself (its shapes are not its parameters')."""
    from msmigrate.rules.generated import distributions as generated
    return family.generated and hasattr(getattr(generated, "msmigrate_" + kind, None), name)


def generated_function(site):
    """A torch function MindSpore lacks: the function of rules/generated/distributions.py of its
    name, copied into the file, called with torch's arguments."""
    return site.node.with_changes(func=_define(site, "msmigrate_" + site.record.torch.rsplit(".", 1)[1]))


# torch's icdf where MindSpore's class has none: from its parameters (get_dist_args order)
ICDF = {
    "Cauchy": "{loc} + {scale} * {tan}({pi} * ({q} - 0.5))",
    "Exponential": "-{log1p}(-{q}) / {rate}",
    "Uniform": "{low} + {q} * ({high} - {low})",
    "Normal": "{loc} + {scale} * {erfinv}(2 * {q} - 1) * 1.4142135623730951",
    "LogNormal": "{exp}({loc} + {scale} * {erfinv}(2 * {q} - 1) * 1.4142135623730951)",
    "Gumbel": "{loc} - {scale} * {log}(-{log}({q}))",
}


def icdf(site):
    """`d.icdf(q)`: the generated classes' own; a closed form for MindSpore's families in ICDF."""
    import math

    kind, family = _family(site)
    if family.generated:
        from msmigrate.rules.generated import distributions as generated
        if hasattr(getattr(generated, "msmigrate_" + kind), "icdf"):
            return site.node
        raise Unconvertible(f"{kind}.icdf: torch's {kind} has none either (NotImplementedError)", "review")
    if kind not in ICDF:
        raise Unconvertible(f"{kind}.icdf: MindSpore's {kind} has no inverse cdf: convert by hand", "manual")
    q = site.arg("value")
    if q is None:
        raise Unconvertible(f"{kind}.icdf without its argument", "review")
    args = {}
    for at, name in enumerate(family.params):
        args[name] = site.expr("{b}(*{x}.get_dist_args())[%d]" % at, x=site.receiver,
                               b="@mindspore.numpy.broadcast_arrays") if len(family.params) > 1 else \
            site.expr("{x}.get_dist_args()[%d]" % at, x=site.receiver)
    names = {"q": q, "tan": "@mindspore.ops.tan", "log1p": "@mindspore.ops.log1p", "log": "@mindspore.ops.log",
             "exp": "@mindspore.ops.exp", "erfinv": "@mindspore.ops.erfinv",
             "pi": site.expr(repr(math.pi)), **args}
    return site.expr(ICDF[kind], **{k: v for k, v in names.items() if "{%s}" % k in ICDF[kind]})
