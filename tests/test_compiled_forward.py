"""Which network calls outside the train step are compiled (rules/compiled_forward.py): those in
a loop that nothing differentiates. The run-time behaviour (same values as torch, one compilation)
is tests/test_training_loops.py::test_evaluation_loops_run_compiled_and_print_torchs_values."""
from __future__ import annotations

import textwrap

from msmigrate import convert_source

HEAD = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, h=None):
        return self.fc(x)


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def compiled_calls(body: str) -> list[str]:
    code = convert_source(HEAD + textwrap.dedent(body), "t.py").code
    return [line.strip() for line in code.splitlines()
            if "msmigrate_forward(" in line and "def msmigrate_forward" not in line]


def test_a_test_loop_after_the_training_loop_is_compiled():
    calls = compiled_calls("""
        for epoch in range(2):
            for x in data:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
            for x in test_data:
                print(model(x).sum().item())
        """)
    assert calls == ["print(msmigrate_forward(model, x).sum().item())"]


def test_a_network_made_and_moved_in_one_expression_is_one():
    calls = compiled_calls("""
        net = Net().to("cpu").eval()
        for x in data:
            print(net(x))
        """)
    assert calls == ["print(msmigrate_forward(net, x))"]


def test_a_forward_unrolled_in_a_loop_before_backward_is_not_compiled():
    assert compiled_calls("""
        for x in data:
            optimizer.zero_grad()
            out = 0
            for t in range(3):
                out = out + model(x[t])
            out.sum().backward()
            optimizer.step()
        """) == []


def test_outputs_a_later_function_differentiates_are_not_compiled():
    assert compiled_calls("""
        saved = []
        def finish():
            torch.stack(saved).sum().backward()
            optimizer.step()
        for episode in range(3):
            for t in range(4):
                saved.append(model(x))
            finish()
        """) == []


def test_a_function_given_the_network_under_no_grad_is_compiled():
    calls = compiled_calls("""
        @torch.no_grad()
        def evaluate(net, batches):
            return [net(x) for x in batches] + [net(b) for b in batches for _ in range(1)]

        def test(net, batches):
            for x in batches:
                print(net(x))

        for x in data:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
        evaluate(model, data)
        test(model, data)
        """)
    assert calls == ["return [msmigrate_forward(net, x) for x in batches] + [msmigrate_forward(net, b) for b "
                     "in batches for _ in range(1)]", "print(msmigrate_forward(net, x))"]


def test_a_function_that_trains_then_evaluates_compiles_its_evaluation():
    # the call `train(net, ...)` differentiates only through train's own body, which the
    # evaluation loop comes after; `Net = Net()` (ls-gru-sine) is one network from then on
    calls = compiled_calls("""
        def train(net, batches):
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for epoch in range(2):
                for x in batches:
                    opt.zero_grad()
                    net(x).sum().backward()
                    opt.step()
                for x in batches:
                    print(net(x).sum().item())

        Net = Net()
        train(Net, data)
        """)
    assert calls == ["print(msmigrate_forward(net, x).sum().item())"]
    # ... but a call statement that also differentiates what the function returns is no evaluation
    assert compiled_calls("""
        def outputs(net, batches):
            return [net(x) for x in batches]

        outputs(model, data)[0].sum().backward()
        """) == []


def test_a_growing_input_is_not_compiled():
    assert compiled_calls("""
        with torch.no_grad():
            seq = torch.zeros(1, 4)
            for _ in range(5):
                seq = torch.cat((seq, model(seq)[-1:]), 0)
        """) == []


def test_networks_whose_code_a_graph_would_freeze_are_called_uncompiled():
    """A construct drawing from NumPy (frozen at compile time in a graph): the step is left
    uncompiled (MSC109), and so are the evaluation calls, with no helper left behind."""
    head = HEAD.replace("        return self.fc(x)",
                        "        return self.fc(x) + torch.from_numpy(np.random.rand(1).astype(np.float32))")
    source = "import numpy as np\n" + head + textwrap.dedent("""
        for x in data:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
        with torch.no_grad():
            for x in data:
                print(model(x))
        """)
    result = convert_source(source, "t.py")
    assert "MSC109" in {d.code for d in result.diagnostics}
    assert "msmigrate_forward" not in result.code and "print(model(x))" in result.code
    assert "MSG203 at line 13 of the converted code" in result.code   # a line of the final code:
    assert "np.random.rand" in result.code.splitlines()[12]
