"""View and ConvertFP8 on CuPy arrays: a view reinterprets device memory (bfloat16 is kept as
uint16 bits, the same bytes); fp8 conversion goes through the CPU encoding on the host."""

from __future__ import annotations

import cupy as cp

from ...primitives.bitcast import ConvertFP8, View
from ..cpu.bitcast import decode_fp8, encode_fp8
from ..registry import to_host
from .runtime import gpu


def _storage(d):
    return cp.uint16 if d.name == "bfloat16" else d.np


@gpu(View)
def _view(prim, ins, node):
    x = cp.ascontiguousarray(ins[0])
    return [x.view(_storage(prim.dtype)).reshape(node._shape)]


@gpu(ConvertFP8)
def _convert_fp8(prim, ins, node):
    host = to_host(ins[0], node._inputs[0]._dtype)
    if prim.to_fp8:
        return [cp.asarray(encode_fp8(host))]
    out = decode_fp8(host, prim.dtype.np)
    if prim.dtype.name == "bfloat16":
        out = out.view("uint16")
    return [cp.asarray(out)]
