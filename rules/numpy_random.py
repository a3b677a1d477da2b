"""A program that seeds NumPy's global random state and draws from it after building a network.
MindSpore's weight initialisers take their seeds from that state (one np.random draw per
parameter) and ms.set_seed (torch.manual_seed's conversion) seeds it again; torch touches neither.
The converted program then draws other numbers than the torch program from the same seed (other
data, other noise): runs, and its losses differ. Marked at the `np.random.seed(...)` statement
(MSC101), with what to do: a generator of the program's own (np.random.RandomState(seed)), which
MindSpore leaves alone. A structural pass on torch names, before the table pass; rewrites nothing
but the marker."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import PathTransformer, resolve

_NOT_DRAWS = {"seed", "RandomState", "default_rng", "Generator", "get_state", "set_state", "SeedSequence",
              "PCG64", "MT19937", "Philox", "SFC64", "BitGenerator"}
MESSAGE = ("numpy.random.seed: MindSpore's weight initialisers draw their seeds from NumPy's global random "
           "state (and ms.set_seed seeds it again), so NumPy draws made after a network is built differ "
           "from the torch program's: draw from a generator of your own (rng = np.random.RandomState(seed); "
           "rng.uniform(...)) to get torch's numbers")


class NumpyRandomPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "random.seed(" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.imports = dict(ctx.names.imports)
        scan = _Scan(self._kind)
        ctx.module.visit(scan)
        self.seeds = scan.seeds if scan.draws_after_network else []
        seeds = {id(s) for s in self.seeds}
        self.follow(ctx.module, lambda node, ancestors: id(node) in seeds)   # only the way to them is rebuilt

    def _kind(self, call: cst.Call) -> str | None:
        q = resolve(call.func, self.imports) or ""
        if q == "numpy.random.seed":
            return "seed"
        if q.startswith("numpy.random.") and q.count(".") == 2 and q.rpartition(".")[2] not in _NOT_DRAWS:
            return "draw"
        if q.startswith("torch.nn.") and q.count(".") == 2 and q.rpartition(".")[2][:1].isupper():
            return "network"
        return None

    def leave_SimpleStatementLine(self, original, updated):
        if not any(original is s for s in self.seeds):
            return updated
        pos = self.ctx.positions.get(original)
        line, col = (pos.start.line, pos.start.column + 1) if pos is not None else (1, 1)
        marker = self.ctx.reporter.flag("review", MESSAGE, line, col)
        return updated.with_changes(leading_lines=[*updated.leading_lines, cst.EmptyLine(comment=cst.Comment(marker))])


class _Scan(cst.CSTVisitor):
    """Seeding statements, and whether a draw can run after a network is built: a network made
    at module level (a torch.nn layer or a class of the file), and a draw after it at module
    level or in a function (called later); a network made in a function (`main()`), and a draw
    in a function (after it in the same one, or in another, called later)."""

    def __init__(self, kind) -> None:
        self.kind = kind
        self.seeds: list = []
        self.statement = None
        self.nested = 0              # depth in functions and classes
        self.in_class = 0            # depth in classes (their layers are made when they are called)
        self.classes: set[str] = set()
        self.network_made = False
        self.network_in_function = False
        self.draw_after_network = False
        self.draw_in_function = False

    @property
    def draws_after_network(self) -> bool:
        return self.draw_after_network or ((self.network_made or self.network_in_function) and self.draw_in_function)

    def visit_SimpleStatementLine(self, node) -> None:
        self.statement = node

    def visit_ClassDef(self, node) -> None:
        self.classes.add(node.name.value)
        self.nested += 1
        self.in_class += 1

    def leave_ClassDef(self, node) -> None:
        self.nested -= 1
        self.in_class -= 1

    def visit_FunctionDef(self, node) -> None:
        self.nested += 1

    def leave_FunctionDef(self, node) -> None:
        self.nested -= 1

    def visit_Call(self, node: cst.Call) -> None:
        kind = self.kind(node)
        if kind == "seed" and self.statement is not None:
            self.seeds.append(self.statement)
        elif kind == "draw":
            self.draw_in_function |= self.nested > 0
            self.draw_after_network |= self.network_made
        elif kind == "network" or (isinstance(node.func, cst.Name) and node.func.value in self.classes):
            if not self.nested:
                self.network_made = True
            elif not self.in_class:
                self.network_in_function = True
