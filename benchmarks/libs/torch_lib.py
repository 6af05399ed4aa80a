"""PyTorch on the CPU: eager ops and ``torch.compile`` (inductor). Not installable on every machine:
PyPI's Linux x86_64 wheel pulls the CUDA stack (several GB); runs wherever torch is present."""

from __future__ import annotations

import itertools
import os
from typing import Any, Callable

import numpy as np

from .. import workloads as W
from .base import ArrayAdapter, NotApplicable, Thunk


class Adapter(ArrayAdapter):
    name = "torch"
    eager = "torch"
    compiled = "torch.compile"

    def load(self) -> str:
        import torch

        threads = os.environ.get("BENCH_THREADS")
        if threads:
            torch.set_num_threads(int(threads))
        torch.set_grad_enabled(False)  # element-wise workloads; training enables it locally
        self.torch = torch

        class F:
            add = staticmethod(torch.add)
            multiply = staticmethod(torch.mul)
            exp = staticmethod(torch.exp)
            tanh = staticmethod(torch.tanh)
            erf = staticmethod(torch.erf)
            sigmoid = staticmethod(torch.sigmoid)
            log = staticmethod(torch.log)
            log2 = staticmethod(torch.log2)
            log10 = staticmethod(torch.log10)
            log1p = staticmethod(torch.log1p)
            power = staticmethod(torch.pow)

        self.F = F
        return torch.__version__

    def asarray(self, a: np.ndarray) -> Any:
        return self.torch.from_numpy(np.ascontiguousarray(a))

    def to_numpy(self, out: Any) -> np.ndarray:
        return out.detach().numpy()

    def compile_fn(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return self.torch.compile(fn, dynamic=False)

    def train(self, variant: str, case: str = "mlp_step") -> tuple[Thunk, Callable[[Any], float]]:
        if case not in ("mlp_step", "transformer_step"):
            raise NotApplicable(f"{case} is not written for PyTorch here")
        torch = self.torch
        torch.set_grad_enabled(True)
        torch.manual_seed(0)
        if case == "transformer_step":
            model, data = _language_model(torch), W.lm_data()
        else:
            s = W.MLP_SIZES
            model = torch.nn.Sequential(
                torch.nn.Linear(s[0], s[1]),
                torch.nn.ReLU(),
                torch.nn.Linear(s[1], s[2]),
                torch.nn.ReLU(),
                torch.nn.Linear(s[2], s[3]),
            )
            data = W.train_data()
        batches = itertools.cycle(
            [(torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))) for x, y in data]
        )
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def loss_fn(logits: Any, y: Any) -> Any:  # mean over every (batch, position) target
            return torch.nn.functional.cross_entropy(logits.flatten(0, -2), y.flatten())

        forward = model
        opt_step = opt.step
        if self.is_compiled(variant):
            # the recipe of PyTorch's tutorials: compiled model and compiled optimizer step
            forward = torch.compile(model)
            opt_step = torch.compile(opt.step)

        def thunk() -> Any:
            x, y = next(batches)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(forward(x), y)
            loss.backward()
            opt_step()
            return loss.detach()

        return thunk, lambda t: float(t.item())


def _language_model(torch: Any) -> Any:
    """``workloads.LM`` as MLX's nn.TransformerEncoder computes it (pre-norm layers, attention
    projections without bias, MLP with bias and ReLU, a final LayerNorm), with plain torch.nn."""
    nn, F = torch.nn, torch.nn.functional
    c = W.LM
    d = c["dims"]

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def attention(self, x: Any, mask: Any) -> Any:
            b, s, _ = x.shape
            split = lambda t: t.view(b, s, c["heads"], -1).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1) + mask
            out = scores.softmax(-1) @ v
            return self.o(out.transpose(1, 2).reshape(b, s, d))

        def forward(self, x: Any, mask: Any) -> Any:
            x = x + self.attention(self.ln1(x), mask)
            return x + self.fc2(F.relu(self.fc1(self.ln2(x))))

    class LanguageModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(c["vocab"], d)
            self.positions = nn.Embedding(c["seq"], d)
            for e in (self.tokens, self.positions):  # MLX's Embedding init, not torch's N(0, 1)
                nn.init.normal_(e.weight, std=d**-0.5)
            self.layers = nn.ModuleList(Layer() for _ in range(c["layers"]))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, c["vocab"])
            # additive causal mask: 0 where a position may attend, -1e9 above the diagonal
            self.register_buffer("mask", torch.full((c["seq"], c["seq"]), -1e9).triu(1))

        def forward(self, x: Any) -> Any:
            n = x.shape[1]
            h = self.tokens(x) + self.positions(torch.arange(n, device=x.device))
            for layer in self.layers:
                h = layer(h, self.mask[:n, :n])
            return self.head(self.ln(h))

    return LanguageModel()
