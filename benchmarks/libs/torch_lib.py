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
        self.F = F
        return torch.__version__

    def asarray(self, a: np.ndarray) -> Any:
        return self.torch.from_numpy(np.ascontiguousarray(a))

    def to_numpy(self, out: Any) -> np.ndarray:
        return out.detach().numpy()

    def compile_fn(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return self.torch.compile(fn, dynamic=False)

    def train(self, variant: str, case: str = "mlp_step") -> tuple[Thunk, Callable[[Any], float]]:
        if case != "mlp_step":
            raise NotApplicable(f"{case} is not written for PyTorch here")
        torch = self.torch
        torch.set_grad_enabled(True)
        torch.manual_seed(0)
        batches = itertools.cycle([(torch.from_numpy(x), torch.from_numpy(y.astype(np.int64)))
                                   for x, y in W.train_data()])
        s = W.MLP_SIZES
        model = torch.nn.Sequential(torch.nn.Linear(s[0], s[1]), torch.nn.ReLU(),
                                    torch.nn.Linear(s[1], s[2]), torch.nn.ReLU(),
                                    torch.nn.Linear(s[2], s[3]))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = torch.nn.functional.cross_entropy
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
