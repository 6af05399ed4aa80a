"""Data read when it is evaluated, as MLX's ``load`` reads (``FileData``): ``load`` checks a
file's header at once; the array's bytes are read only when the array is computed, into a
buffer of the CPU cache (so it counts as active memory and a later operation may write over
it). The file's size is checked against the bytes wanted before anything is allocated, and
every read is checked to be whole: a file truncated before (or after) ``load`` raises
RuntimeError naming the file at evaluation, never a partly filled array."""

from __future__ import annotations

import os

import numpy as np

from ..backends.cpu.memory import empty
from ..backends.registry import register
from ..core.array import Array
from ..core.dtypes import from_numpy
from ..core.primitive import Primitive


class FileData(Primitive):
    """The ``shape`` elements of ``dtype`` (native byte order, C order) at ``offset`` of the
    open binary file ``file`` (kept open until the array is computed or dropped, so a file
    renamed over the path meanwhile is not read instead). ``label``, ``what``: the file's
    name and the function, for errors."""

    __slots__ = ("file", "offset", "dtype", "shape", "label", "what")
    name = "load"
    differentiable = False

    def __init__(self, file, offset: int, dtype: np.dtype, shape: tuple, label: str, what: str):
        self.file, self.offset, self.dtype, self.shape = file, offset, dtype, tuple(shape)
        self.label, self.what = label, what

    @property
    def params(self) -> tuple:
        return (id(self.file), self.offset, self.dtype.str, self.shape)

    def infer(self, inputs):
        return [(self.shape, from_numpy(self.dtype))]

    def vmap(self, inputs, axes):
        return [Array.make(self, [])], [None]

    def _error(self, problem: str) -> RuntimeError:
        return RuntimeError(f"{self.what}: {self.label}: {problem}")

    def read(self) -> np.ndarray:
        """The data, read whole into a new cache buffer (RuntimeError where it cannot be)."""
        count = 1
        for d in self.shape:
            count *= d
        nbytes = count * self.dtype.itemsize
        try:
            fd = self.file.fileno()
            size = os.fstat(fd).st_size
        except (OSError, ValueError) as e:
            raise self._error(f"cannot read the data: {e}") from None
        if self.offset + nbytes > size:
            raise self._error(
                f"the data ({nbytes} bytes at offset {self.offset}) extends past the end of "
                f"the file ({size} bytes): truncated or damaged"
            )
        out = empty(self.shape, self.dtype)
        view = memoryview(out.reshape(-1).view(np.uint8))
        got = 0
        while got < nbytes:
            try:
                n = os.preadv(fd, [view[got:]], self.offset + got)
            except OSError as e:
                raise self._error(f"reading the data failed: {e}") from None
            if n == 0:
                raise self._error(
                    f"the data could not be read whole ({got} of {nbytes} bytes): the file "
                    "was truncated"
                )
            got += n
        return out


@register(FileData)
def _read(prim, ins, node):
    return [prim.read()]
