"""Writes tests/quantized/data/mlx_quantized.npz: MLX's packed codes, scales and biases for
fixed inputs (every affine group size and bit width, and the float modes), the reference the
packing tests compare against bit for bit. Needs MLX, which nuvec never depends on: run it
once in a scratch environment,

    python -m venv /tmp/mlxenv && /tmp/mlxenv/bin/pip install "mlx[cpu]"
    /tmp/mlxenv/bin/python tests/quantized/make_mlx_reference.py
"""

from pathlib import Path

import mlx.core as mx
import numpy as np

OUT = Path(__file__).parent / "data" / "mlx_quantized.npz"


def inputs(seed: int, shape, dtype=np.float32) -> np.ndarray:
    """The test input for a seed: normal values with a few exact zeros and ties."""
    w = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    w[0, :8] = 0.0  # a group edge case: zeros
    w[1, :4] = [0.5, -0.5, 0.25, -0.25]
    return w.astype(dtype)


def main() -> None:
    mx.set_default_device(mx.cpu)
    out = {}
    seed = 0
    for gs in (32, 64, 128):
        for bits in (2, 3, 4, 5, 6, 8):
            for dt in ("float32", "float16"):
                seed += 1
                w = inputs(seed, (4, 256), np.dtype(dt))
                wq, s, b = mx.quantize(mx.array(w), gs, bits)
                key = f"affine_{gs}_{bits}_{dt}"
                out[key + "_w"] = w
                out[key + "_q"] = np.array(wq)
                out[key + "_s"] = np.array(s)
                out[key + "_b"] = np.array(b)
                out[key + "_d"] = np.array(mx.dequantize(wq, s, b, gs, bits))
    for mode in ("mxfp4", "mxfp8", "nvfp4"):
        seed += 1
        w = inputs(seed, (4, 128))
        wq, s = mx.quantize(mx.array(w), mode=mode)
        out[f"{mode}_w"] = w
        out[f"{mode}_q"] = np.array(wq)
        out[f"{mode}_s"] = np.array(s)
        out[f"{mode}_d"] = np.array(mx.dequantize(wq, s, mode=mode, dtype=mx.float32))
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({len(out)} arrays, MLX {mx.__version__})")


if __name__ == "__main__":
    main()
