"""Optimizers with MLX's interface (``mlx.optimizers``).

An optimizer keeps its whole state in ``optimizer.state``, a dict of arrays: ``step``
(uint64), hyper-parameters that may change (``learning_rate``, as an array so a schedule or a
new value changes no traced constant), and per-parameter state in a tree shaped like the
parameters. That dict is what a compiled step lists among its inputs and outputs.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> import nuvec.optimizers as optim
>>> model = nn.Linear(2, 1)
>>> opt = optim.SGD(learning_rate=0.1, momentum=0.9)
>>> grads = {"weight": nv.ones((1, 2)), "bias": nv.ones((1,))}
>>> opt.update(model, grads)
>>> int(opt.step), sorted(opt.state["weight"])
(1, ['v'])
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import nuvec as nv
from nuvec.utils import tree_flatten, tree_merge, tree_unflatten

Schedule = Callable[[Any], Any]
LR = Union[float, Schedule]


def _map_state(fn: Callable, grads: Any, params: Any, state: Any) -> Any:
    """``fn(grad, param, state)`` for every array leaf of ``grads``, walking ``params`` and
    ``state`` alongside; returns a tree shaped like ``grads``."""
    if isinstance(grads, dict):
        return {k: _map_state(fn, g, params[k], state[k]) for k, g in grads.items()}
    if isinstance(grads, (list, tuple)):
        out = [_map_state(fn, g, params[i], state[i]) for i, g in enumerate(grads)]
        return type(grads)(out) if isinstance(grads, tuple) else out
    if isinstance(grads, nv.array):
        return fn(grads, params, state)
    return grads


def _leaves(tree: Any, out: list) -> list:
    if isinstance(tree, dict):
        for v in tree.values():
            _leaves(v, out)
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            _leaves(v, out)
    elif isinstance(tree, nv.array):
        out.append(tree)
    return out


def _empty_like(tree: Any) -> Any:
    """A tree of empty per-parameter state dicts shaped like ``tree``."""
    if isinstance(tree, dict):
        return {k: _empty_like(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_empty_like(v) for v in tree]
    return {}


def _grow(params: Any, state: Any) -> Any:
    """``state`` extended with empty entries for parameters it does not cover yet."""
    if isinstance(params, dict):
        for k, v in params.items():
            state[k] = _grow(v, state[k]) if k in state else _empty_like(v)
        return state
    if isinstance(params, (list, tuple)):
        state = list(state)
        for i, v in enumerate(params):
            if i < len(state):
                state[i] = _grow(v, state[i])
            else:
                state.append(_empty_like(v))
        return state
    return state


def _init_leaves(fn: Callable, params: Any, state: Any) -> None:
    if isinstance(params, dict):
        for k, v in params.items():
            _init_leaves(fn, v, state[k])
    elif isinstance(params, (list, tuple)):
        for i, v in enumerate(params):
            _init_leaves(fn, v, state[i])
    elif isinstance(params, nv.array) and isinstance(state, dict) and not state:
        fn(params, state)


class Optimizer:
    """The base class: subclasses define ``init_single(param, state)`` (fill the state dict
    of one parameter) and ``apply_single(grad, param, state)`` (return the new parameter and
    update ``state``)."""

    def __init__(self, schedulers: Optional[dict] = None) -> None:
        self._initialized = False
        self._state: dict = {"step": nv.array(0, nv.uint64)}
        self._schedulers: dict = dict(schedulers or {})

    def update(self, model, gradients: dict) -> None:
        """Applies ``gradients`` to ``model``'s parameters in place."""
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: dict) -> None:
        """Creates the per-parameter state for ``parameters`` (a tree like
        ``model.trainable_parameters()``); entries that exist are kept. Calling it before a
        compiled step fixes the state's structure before tracing."""
        self._state = _grow(parameters, self._state)
        _init_leaves(self.init_single, parameters, self._state)
        self._initialized = True

    def init_single(self, parameter, state: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__}.init_single")

    def apply_gradients(self, gradients: dict, parameters: Any) -> dict:
        """The updated parameters (a tree like ``gradients``); advances the step and the
        schedules."""
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self._state[name] = schedule(self.step)
        self._state["step"] = self.step + 1
        return _map_state(self.apply_single, gradients, parameters, self._state)

    def apply_single(self, gradient, parameter, state: dict):
        raise NotImplementedError(f"{type(self).__name__}.apply_single")

    @property
    def state(self) -> dict:
        """All of the optimizer's arrays (for ``nv.compile(inputs=..., outputs=...)``)."""
        return self._state

    @state.setter
    def state(self, state: dict) -> None:
        self._initialized = False
        self._state = state

    @property
    def step(self):
        """The number of updates applied so far (a uint64 array)."""
        return self._state["step"]

    @property
    def learning_rate(self):
        """The current learning rate (an array)."""
        return self._state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        self._state["learning_rate"] = nv.array(value)

    def _maybe_schedule(self, name: str, value: LR) -> None:
        """Stores hyper-parameter ``name`` in the state: a constant, or a schedule (a
        function of the step) re-evaluated at every update."""
        if callable(value):
            self._schedulers[name] = value
            v = value(self.step)
        else:
            v = nv.array(value)
        self._state[name] = v if isinstance(v, nv.array) else nv.array(v)

    def _lr(self, gradient):
        return nv.astype(self.learning_rate, gradient.dtype)


class MultiOptimizer(Optimizer):
    """Routes each parameter to one of several optimizers.

    ``filters[i](path, weight)`` (``path`` as in ``tree_flatten``, e.g. ``"layers.0.weight"``)
    selects the parameters of ``optimizers[i]``; the first filter that accepts a parameter
    wins, and the last optimizer (which takes no filter) gets the rest.

    >>> import nuvec.optimizers as optim
    >>> opt = optim.MultiOptimizer([optim.Adam(1e-3), optim.SGD(0.1)],
    ...                            [lambda path, w: w.ndim > 1])
    >>> opt.init({"weight": nv.zeros((2, 2)), "bias": nv.zeros((2,))})
    >>> sorted(opt.state["states"][0]), sorted(opt.state["states"][1])
    (['learning_rate', 'step', 'weight'], ['bias', 'learning_rate', 'step'])
    """

    def __init__(
        self, optimizers: Sequence[Optimizer], filters: Sequence[Callable[[str, Any], bool]] = ()
    ) -> None:
        super().__init__()
        self._state = {}
        if len(filters) != len(optimizers) - 1:
            raise ValueError(
                f"MultiOptimizer: {len(optimizers)} optimizers need "
                f"{len(optimizers) - 1} filters, got {len(filters)}"
            )
        self.optimizers = list(optimizers)
        self.filters = list(filters) + [lambda path, weight: True]

    def _split(self, tree: Any) -> list:
        """``tree`` cut into one sub-tree per optimizer."""
        if len(self.optimizers) == 1:
            return [tree]
        parts: list = [[] for _ in self.optimizers]
        for path, leaf in tree_flatten(tree):
            i = next(i for i, accepts in enumerate(self.filters) if accepts(path, leaf))
            parts[i].append((path, leaf))
        return [tree_unflatten(p) for p in parts]

    def init(self, parameters: dict) -> None:
        for opt, part in zip(self.optimizers, self._split(parameters)):
            opt.init(part)

    def apply_gradients(self, gradients: dict, parameters: Any) -> dict:
        out: dict = {}
        for opt, part in zip(self.optimizers, self._split(gradients)):
            out = tree_merge(out, opt.apply_gradients(part, parameters))
        return out

    @property
    def state(self) -> dict:
        """``{"states": [state of each optimizer]}``."""
        return {"states": [opt.state for opt in self.optimizers]}

    @state.setter
    def state(self, state: dict) -> None:
        if not isinstance(state, dict) or len(state.get("states", ())) != len(self.optimizers):
            raise ValueError(
                f"MultiOptimizer: the state needs a 'states' list of "
                f"{len(self.optimizers)} optimizer states"
            )
        for opt, s in zip(self.optimizers, state["states"]):
            opt.state = s

    @property
    def learning_rate(self):
        """The first optimizer's learning rate; setting it sets every optimizer's."""
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        for opt in self.optimizers:
            opt.learning_rate = value


def _check_betas(betas: Sequence[float], name: str) -> tuple:
    betas = tuple(betas)
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"{name}: beta{i + 1} must be in [0, 1), got {b}")
    return betas


def _check_positive(v: float, what: str, name: str, allow_zero: bool = False) -> None:
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name}: {what} must be {'>=0' if allow_zero else '>0'}, got {v}")


class SGD(Optimizer):
    r"""Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and
    (L2) weight decay:

    .. math:: g' = g + \lambda p,\quad v \leftarrow \mu v + (1 - \tau) g',\quad
              p \leftarrow p - \eta (g' + \mu v \text{ if nesterov else } v)

    (with ``momentum`` 0: :math:`p \leftarrow p - \eta g'`).
    """

    def __init__(
        self,
        learning_rate: LR,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening 0")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def init_single(self, parameter, state: dict) -> None:
        state["v"] = nv.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state: dict):
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        lr = self._lr(gradient)
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state["v"]
        v = v + ((1 - self.dampening) * gradient if self.dampening > 0 else gradient)
        state["v"] = v
        step = gradient + self.momentum * v if self.nesterov else v
        return parameter - lr * step


class RMSprop(Optimizer):
    r""":math:`v \leftarrow \alpha v + (1 - \alpha) g^2,\;
    p \leftarrow p - \eta g / (\sqrt{v} + \epsilon)`."""

    def __init__(self, learning_rate: LR, alpha: float = 0.99, eps: float = 1e-8) -> None:
        super().__init__()
        _check_positive(alpha, "alpha", "RMSprop", allow_zero=True)
        _check_positive(eps, "eps", "RMSprop")
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha = alpha
        self.eps = eps

    def init_single(self, parameter, state: dict) -> None:
        state["v"] = nv.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state: dict):
        v = self.alpha * state["v"] + (1 - self.alpha) * nv.square(gradient)
        state["v"] = v
        return parameter - self._lr(gradient) * gradient / (nv.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    r""":math:`v \leftarrow v + g^2,\; p \leftarrow p - \eta g / (\sqrt{v} + \epsilon)`."""

    def __init__(self, learning_rate: LR, eps: float = 1e-8) -> None:
        super().__init__()
        _check_positive(eps, "eps", "Adagrad")
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps

    def init_single(self, parameter, state: dict) -> None:
        state["v"] = nv.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state: dict):
        v = state["v"] + nv.square(gradient)
        state["v"] = v
        return parameter - self._lr(gradient) * gradient / (nv.sqrt(v) + self.eps)


class AdaDelta(Optimizer):
    r""":math:`v \leftarrow \rho v + (1-\rho) g^2,\;
    d = \sqrt{u + \epsilon} / \sqrt{v + \epsilon}\, g,\;
    u \leftarrow \rho u + (1-\rho) d^2,\; p \leftarrow p - \eta d`."""

    def __init__(self, learning_rate: LR, rho: float = 0.9, eps: float = 1e-6) -> None:
        super().__init__()
        _check_positive(rho, "rho", "AdaDelta", allow_zero=True)
        _check_positive(eps, "eps", "AdaDelta")
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho = rho
        self.eps = eps

    def init_single(self, parameter, state: dict) -> None:
        state["v"] = nv.zeros_like(parameter)
        state["u"] = nv.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state: dict):
        rho, eps = self.rho, self.eps
        v = rho * state["v"] + (1 - rho) * nv.square(gradient)
        d = nv.sqrt(state["u"] + eps) / nv.sqrt(v + eps) * gradient
        state["u"] = rho * state["u"] + (1 - rho) * nv.square(d)
        state["v"] = v
        return parameter - self._lr(gradient) * d


class Adam(Optimizer):
    r"""Adam: :math:`m \leftarrow \beta_1 m + (1-\beta_1) g,\;
    v \leftarrow \beta_2 v + (1-\beta_2) g^2,\; p \leftarrow p - \eta m / (\sqrt{v}+\epsilon)`.

    As in MLX, ``bias_correction`` is off by default; with it the step is
    :math:`\eta / (1-\beta_1^t)\, m / (\sqrt{v} / \sqrt{1-\beta_2^t} + \epsilon)`.
    """

    def __init__(
        self,
        learning_rate: LR,
        betas: Sequence[float] = (0.9, 0.999),
        eps: float = 1e-8,
        bias_correction: bool = False,
    ) -> None:
        super().__init__()
        self.betas = _check_betas(betas, type(self).__name__)
        _check_positive(eps, "eps", type(self).__name__, allow_zero=True)
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        self.bias_correction = bias_correction

    def init_single(self, parameter, state: dict) -> None:
        state["m"] = nv.zeros_like(parameter)
        state["v"] = nv.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state: dict):
        b1, b2 = self.betas
        lr = self._lr(gradient)
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * nv.square(gradient)
        state["m"], state["v"] = m, v
        if not self.bias_correction:
            return parameter - lr * m / (nv.sqrt(v) + self.eps)
        t = self.step
        c1 = nv.astype(lr / (1 - b1**t), gradient.dtype)
        c2 = nv.astype(nv.rsqrt(1 - b2**t), gradient.dtype)
        return parameter - c1 * m / (nv.sqrt(v) * c2 + self.eps)


class AdamW(Adam):
    r"""Adam with decoupled weight decay: first :math:`p \leftarrow p (1 - \eta \lambda)`,
    then the Adam step."""

    def __init__(
        self,
        learning_rate: LR,
        betas: Sequence[float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        bias_correction: bool = False,
    ) -> None:
        super().__init__(learning_rate, betas, eps, bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient, parameter, state: dict):
        decayed = parameter * (1 - self._lr(gradient) * self.weight_decay)
        return super().apply_single(gradient, decayed, state)


class Adamax(Adam):
    r"""Adamax: :math:`m \leftarrow \beta_1 m + (1-\beta_1) g,\;
    v \leftarrow \max(\beta_2 v, |g|),\; p \leftarrow p - \eta m / (v + \epsilon)`."""

    def __init__(
        self, learning_rate: LR, betas: Sequence[float] = (0.9, 0.999), eps: float = 1e-8
    ) -> None:
        super().__init__(learning_rate, betas, eps)

    def apply_single(self, gradient, parameter, state: dict):
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = nv.maximum(b2 * state["v"], nv.abs(gradient))
        state["m"], state["v"] = m, v
        return parameter - self._lr(gradient) * m / (v + self.eps)


class Lion(Optimizer):
    r"""Lion: :math:`c = \beta_1 m + (1-\beta_1) g,\; m \leftarrow \beta_2 m + (1-\beta_2) g,
    \; p \leftarrow p (1 - \eta\lambda) - \eta\, \mathrm{sign}(c)`."""

    def __init__(
        self, learning_rate: LR, betas: Sequence[float] = (0.9, 0.99), weight_decay: float = 0.0
    ) -> None:
        super().__init__()
        self.betas = _check_betas(betas, "Lion")
        self._maybe_schedule("learning_rate", learning_rate)
        self.weight_decay = weight_decay

    def init_single(self, parameter, state: dict) -> None:
        state["m"] = nv.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state: dict):
        b1, b2 = self.betas
        lr = self._lr(gradient)
        m = state["m"]
        c = b1 * m + (1 - b1) * gradient
        state["m"] = b2 * m + (1 - b2) * gradient
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * nv.sign(c)


class Adafactor(Optimizer):
    r"""Adafactor: second moments kept factored (row and column means) for parameters of 2
    or more dimensions, updates clipped to RMS ``clip_threshold``, and (``relative_step``)
    a step size :math:`\min(10^{-2}, 1/\sqrt{t})` (:math:`10^{-6} t` with ``warmup_init``)
    scaled by the parameter's RMS (``scale_parameter``); ``learning_rate`` is used when
    ``relative_step`` is off. ``beta_1`` adds a first moment of the update."""

    def __init__(
        self,
        learning_rate: Optional[LR] = None,
        eps: tuple[float, float] = (1e-30, 1e-3),
        clip_threshold: float = 1.0,
        decay_rate: float = -0.8,
        beta_1: Optional[float] = None,
        weight_decay: float = 0.0,
        scale_parameter: bool = True,
        relative_step: bool = True,
        warmup_init: bool = False,
    ) -> None:
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        elif not relative_step:
            raise ValueError("Adafactor: give a learning_rate or use relative_step=True")
        self.eps = tuple(eps)
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter, state: dict) -> None:
        shape, dtype = tuple(parameter.shape), parameter.dtype
        if parameter.ndim >= 2:
            state["exp_avg_sq_row"] = nv.zeros(shape[:-1], dtype=dtype)
            state["exp_avg_sq_col"] = nv.zeros(shape[:-2] + shape[-1:], dtype=dtype)
        else:
            state["exp_avg_sq"] = nv.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = nv.zeros_like(parameter)

    @staticmethod
    def _rms(x):
        return nv.sqrt(nv.mean(nv.square(x)))

    @staticmethod
    def _approximate_exp_moving_avg(row, col):
        """The factored estimate of :math:`1/\\sqrt{v}`: the outer product of the row
        factors (normalised by their mean) and the column factors."""
        r = nv.rsqrt(row / nv.mean(row, axis=-1, keepdims=True))
        return nv.expand_dims(r, -1) * nv.expand_dims(nv.rsqrt(col), -2)

    def _step_size(self, t, param_rms):
        if self.relative_step:
            t = nv.astype(t, nv.float32)
            lo = 1e-6 * t if self.warmup_init else 1e-2
            rel = nv.minimum(lo, nv.rsqrt(t))
        else:
            rel = self.learning_rate
        rel = nv.astype(rel, param_rms.dtype)
        if self.scale_parameter:
            return nv.maximum(self.eps[1], param_rms) * rel
        return rel

    def apply_single(self, gradient, parameter, state: dict):
        t = self.step
        p_rms = self._rms(parameter)
        lr = self._step_size(t, p_rms)
        beta2 = 1.0 - nv.astype(nv.power(nv.astype(t, nv.float32), self.decay_rate), p_rms.dtype)
        sq = nv.square(gradient) + self.eps[0]
        if gradient.ndim >= 2:
            row = beta2 * state["exp_avg_sq_row"] + (1 - beta2) * nv.mean(sq, axis=-1)
            col = beta2 * state["exp_avg_sq_col"] + (1 - beta2) * nv.mean(sq, axis=-2)
            state["exp_avg_sq_row"], state["exp_avg_sq_col"] = row, col
            u = self._approximate_exp_moving_avg(row, col) * gradient
        else:
            v = beta2 * state["exp_avg_sq"] + (1 - beta2) * sq
            state["exp_avg_sq"] = v
            u = nv.rsqrt(v) * gradient
        u = u / nv.maximum(1.0, self._rms(u) / self.clip_threshold)
        u = lr * u
        if self.beta_1 is not None:
            u = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * u
            state["exp_avg"] = u
        if self.weight_decay != 0:
            parameter = parameter + parameter * (-self.weight_decay * lr)
        return parameter - u


class Muon(Optimizer):
    r"""Muon (momentum orthogonalized by Newton-Schulz): SGD momentum
    :math:`v \leftarrow \mu v + (1-\mu) g` (with L2 weight decay folded into :math:`g`),
    Nesterov's :math:`u = (1-\mu) g + \mu v` or :math:`u = v`; for parameters of 2 or more
    dimensions :math:`u` (flattened to ``(shape[0], -1)``) is replaced by its nearest
    semi-orthogonal matrix, approximated by ``ns_steps`` quintic Newton-Schulz steps, and the
    step scaled by :math:`\sqrt{\max(1, d_{-2}/d_{-1})}` of the parameter's last two sizes.

    >>> opt = Muon(learning_rate=0.02)
    >>> new = opt.apply_gradients({"w": nv.ones((4, 3))}, {"w": nv.zeros((4, 3))})
    >>> new["w"].shape
    (4, 3)
    """

    # The quintic's coefficients from the method's reference implementation: they push
    # every singular value towards 1 in a few steps.
    _NS_COEFFS = (3.4445, -4.7750, 2.0315)

    def __init__(
        self,
        learning_rate: LR,
        momentum: float = 0.95,
        weight_decay: float = 0.01,
        nesterov: bool = True,
        ns_steps: int = 5,
    ) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.ns_steps = ns_steps

    def init_single(self, parameter, state: dict) -> None:
        state["v"] = nv.zeros_like(parameter)

    @classmethod
    def _orthogonalize(cls, x, steps: int):
        """Newton-Schulz iteration on a 2-d ``x`` (worked on its wide orientation)."""
        if x.ndim != 2:
            raise ValueError(f"Muon: Newton-Schulz needs a 2-d array, got shape {x.shape}")
        a, b, c = cls._NS_COEFFS
        tall = x.shape[0] > x.shape[1]
        if tall:
            x = x.T
        x = x / (nv.sqrt(nv.sum(nv.square(x), keepdims=True)) + 1e-7)
        for _ in range(steps):
            gram = x @ x.T
            poly = nv.addmm(b * gram, gram, gram, beta=1.0, alpha=c)
            x = nv.addmm(a * x, poly, x, beta=1.0, alpha=1.0)
        return x.T if tall else x

    def apply_single(self, gradient, parameter, state: dict):
        mu = self.momentum
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        v = mu * state["v"] + (1 - mu) * gradient
        state["v"] = v
        update = gradient * (1 - mu) + v * mu if self.nesterov else v
        lr = self._lr(gradient)
        if update.ndim >= 2:
            shape = update.shape
            update = self._orthogonalize(nv.reshape(update, (shape[0], -1)), self.ns_steps)
            update = nv.reshape(update, shape)
            lr = lr * max(1.0, shape[-2] / shape[-1]) ** 0.5
        return parameter - lr * update


def clip_grad_norm(grads: Any, max_norm: float):
    """Scales ``grads`` (a tree) so that their global L2 norm is at most ``max_norm``.

    Returns ``(clipped_grads, total_norm)`` (the norm before clipping).

    >>> import nuvec as nv
    >>> g, n = clip_grad_norm({"w": nv.array([3.0, 4.0])}, 1.0)
    >>> round(n.item(), 4), [round(v, 4) for v in g["w"].tolist()]
    (5.0, [0.6, 0.8])
    """
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm: max_norm must be >= 0, got {max_norm}")
    leaves = _leaves(grads, [])
    if not leaves:
        return grads, nv.array(0.0)
    sq = None
    for g in leaves:
        s = nv.sum(nv.square(nv.astype(g, nv.float32)))
        sq = s if sq is None else sq + s
    total = nv.sqrt(sq)
    scale = nv.minimum(max_norm / (total + 1e-6), 1.0)
    # Floating gradients keep their dtype; integer ones are scaled in float32.
    clipped = _map_state(
        lambda g, p, s: (
            g * (nv.astype(scale, g.dtype) if nv.issubdtype(g.dtype, nv.floating) else scale)
        ),
        grads,
        grads,
        grads,
    )
    return clipped, total


__all__ = [
    "Optimizer",
    "MultiOptimizer",
    "SGD",
    "RMSprop",
    "Adagrad",
    "AdaDelta",
    "Adam",
    "AdamW",
    "Adamax",
    "Lion",
    "Adafactor",
    "Muon",
    "clip_grad_norm",
]
