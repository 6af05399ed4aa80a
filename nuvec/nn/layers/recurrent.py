"""Recurrent layers: RNN (Elman), GRU and LSTM over ``(N, L, D)`` or ``(L, D)`` inputs.

Each layer projects the whole input sequence at once, then loops over the ``L`` steps; the
outputs are the hidden states of every step, stacked on axis -2. A missing initial state
means zeros. Weights are uniform in ``[-1/sqrt(H), 1/sqrt(H)]``; the gates' blocks are stacked
along the first axis (GRU: reset, update, new; LSTM: input, forget, cell, output).

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> h, c = nn.LSTM(4, 8)(nv.ones((2, 5, 4)))
>>> h.shape, c.shape
((2, 5, 8), (2, 5, 8))
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import nuvec as nv

from ...core import shapeless
from .base import Module


def _uniform(scale: float, shape: tuple):
    return nv.random.uniform(low=-scale, high=scale, shape=shape)


def _check_input(x, input_size: int, name: str) -> None:
    if x.ndim not in (2, 3) or x.shape[-1] != input_size:
        raise ValueError(
            f"{name}: expects an input (N, L, {input_size}) or (L, {input_size}), "
            f"got shape {tuple(x.shape)}"
        )
    # the time loop runs once per step of the traced length
    shapeless.refuse_traced(x, name, "the number of time steps")


def _initial(state, x, hidden_size: int):
    """``state``, or zeros of the batch's shape when it is None."""
    if state is None:
        return nv.zeros(tuple(x.shape[:-2]) + (hidden_size,), dtype=x.dtype)
    return state


class RNN(Module):
    r"""The Elman recurrence :math:`h_t = \sigma(W_{xh} x_t + b + W_{hh} h_{t-1})` with
    ``nonlinearity`` :math:`\sigma` (``tanh`` by default). Returns every :math:`h_t`.

    ``__call__(x, hidden=None)``: ``hidden`` is the initial state ``(N, H)`` or ``(H,)``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: Optional[Callable] = None,
    ) -> None:
        super().__init__()
        self.nonlinearity = nonlinearity or nv.tanh
        if not callable(self.nonlinearity):
            raise ValueError(f"RNN: nonlinearity must be callable, got {nonlinearity!r}")
        scale = 1.0 / math.sqrt(hidden_size)
        self.hidden_size = hidden_size
        self.Wxh = _uniform(scale, (hidden_size, input_size))
        self.Whh = _uniform(scale, (hidden_size, hidden_size))
        if bias:
            self.bias = _uniform(scale, (hidden_size,))

    def _extra_repr(self) -> str:
        return (
            f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
            f"nonlinearity={self.nonlinearity}, bias={'bias' in self}"
        )

    def __call__(self, x, hidden=None):
        _check_input(x, self.Wxh.shape[1], "RNN")
        proj = x @ self.Wxh.T
        if "bias" in self:
            proj = proj + self.bias
        h = _initial(hidden, x, self.hidden_size)
        out = []
        for t in range(x.shape[-2]):
            h = self.nonlinearity(proj[..., t, :] + h @ self.Whh.T)
            out.append(h)
        return nv.stack(out, axis=-2)


class GRU(Module):
    r"""The gated recurrent unit:

    .. math::
        r, z = \sigma(W_x^{rz} x_t + b^{rz} + W_h^{rz} h_{t-1}),\quad
        n = \tanh(W_x^n x_t + b^n + r \odot (W_h^n h_{t-1} + b_{hn})),\quad
        h_t = (1 - z) \odot n + z \odot h_{t-1}

    ``__call__(x, hidden=None)``; returns every :math:`h_t`.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        scale = 1.0 / math.sqrt(hidden_size)
        self.hidden_size = hidden_size
        self.Wx = _uniform(scale, (3 * hidden_size, input_size))
        self.Wh = _uniform(scale, (3 * hidden_size, hidden_size))
        if bias:
            self.b = _uniform(scale, (3 * hidden_size,))
            self.bhn = _uniform(scale, (hidden_size,))

    def _extra_repr(self) -> str:
        return f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, bias={'b' in self}"

    def __call__(self, x, hidden=None):
        _check_input(x, self.Wx.shape[1], "GRU")
        H = self.hidden_size
        proj = x @ self.Wx.T
        if "b" in self:
            proj = proj + self.b
        h = _initial(hidden, x, H)
        out = []
        for t in range(x.shape[-2]):
            xt = proj[..., t, :]
            hp = h @ self.Wh.T
            hn = hp[..., 2 * H :]
            if "bhn" in self:
                hn = hn + self.bhn
            rz = nv.sigmoid(xt[..., : 2 * H] + hp[..., : 2 * H])
            r, z = rz[..., :H], rz[..., H:]
            n = nv.tanh(xt[..., 2 * H :] + r * hn)
            h = (1 - z) * n + z * h
            out.append(h)
        return nv.stack(out, axis=-2)


class LSTM(Module):
    r"""The long short-term memory cell:

    .. math::
        i, f, o = \sigma(\cdot),\; g = \tanh(\cdot)\ \text{of}\ W_x x_t + b + W_h h_{t-1},
        \quad c_t = f \odot c_{t-1} + i \odot g,\quad h_t = o \odot \tanh(c_t)

    ``__call__(x, hidden=None, cell=None)``; returns ``(every h_t, every c_t)``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        scale = 1.0 / math.sqrt(hidden_size)
        self.hidden_size = hidden_size
        self.Wx = _uniform(scale, (4 * hidden_size, input_size))
        self.Wh = _uniform(scale, (4 * hidden_size, hidden_size))
        if bias:
            self.bias = _uniform(scale, (4 * hidden_size,))

    def _extra_repr(self) -> str:
        return (
            f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, bias={'bias' in self}"
        )

    def __call__(self, x, hidden=None, cell=None):
        _check_input(x, self.Wx.shape[1], "LSTM")
        H = self.hidden_size
        proj = x @ self.Wx.T
        if "bias" in self:
            proj = proj + self.bias
        h = _initial(hidden, x, H)
        c = _initial(cell, x, H)
        hs, cs = [], []
        for t in range(x.shape[-2]):
            gates = proj[..., t, :] + h @ self.Wh.T
            i = nv.sigmoid(gates[..., :H])
            f = nv.sigmoid(gates[..., H : 2 * H])
            g = nv.tanh(gates[..., 2 * H : 3 * H])
            o = nv.sigmoid(gates[..., 3 * H :])
            c = f * c + i * g
            h = o * nv.tanh(c)
            hs.append(h)
            cs.append(c)
        return nv.stack(hs, axis=-2), nv.stack(cs, axis=-2)
