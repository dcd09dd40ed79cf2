"""Tensors from a PyTorch file of the legacy format, read without PyTorch.

The GE2E speaker encoder ships as ``pretrained.pt`` inside the ``resemblyzer`` wheel,
written by ``torch.save`` before PyTorch 1.6: a run of pickles (magic number,
protocol version, system info, the object itself with its storages as persistent
ids, the list of storage keys), then each storage's raw bytes (an int64 element
count, then the elements, little-endian). Hearth reads it with an unpickler that
knows only what such a file may hold (an ``OrderedDict`` of tensors, the storage
types and ``torch._utils._rebuild_tensor_v2``) and refuses anything else, so a
model file can never run code, and a product install does not need torch's 700 MB.
"""

from __future__ import annotations

import pickle
import struct
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from daemon.errors import ModelUnavailable

MAGIC = 0x1950A86A20F9469CFC6C
"""``torch.serialization.MAGIC_NUMBER``: the first pickle of a legacy file."""
PROTOCOL = 1001
_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


@dataclass
class _Storage:
    dtype: Any
    numel: int
    data: np.ndarray | None = None


@dataclass(frozen=True)
class _Tensor:
    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]

    def array(self) -> np.ndarray:
        data = self.storage.data
        assert data is not None
        if not self.size:
            return np.array(data[self.offset])
        end = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride, strict=True))
        if end >= len(data):
            raise ModelUnavailable("a tensor reaches past its storage")
        view = np.lib.stride_tricks.as_strided(
            data[self.offset :],
            shape=self.size,
            strides=tuple(s * data.itemsize for s in self.stride),
            writeable=False,
        )
        return np.array(view)  # a copy: the storage may be shared


def _rebuild_tensor(
    storage: _Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...], *_: Any
) -> _Tensor:
    return _Tensor(storage, int(offset), tuple(size), tuple(stride))


class _Unpickler(pickle.Unpickler):
    """Knows tensors and ordered dicts; any other class is refused."""

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__(file)
        self.storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in _DTYPES:
            return name
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a model file")

    def persistent_load(self, pid: Any) -> _Storage:
        if not isinstance(pid, tuple) or len(pid) != 6 or pid[0] != "storage":
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r:.80}")
        _, kind, key, _location, numel, view = pid
        if view is not None:
            raise pickle.UnpicklingError("storage views are not supported")
        storage = self.storages.get(key)
        if storage is None:
            storage = self.storages[key] = _Storage(_DTYPES[kind], int(numel))
        return storage


def _tensors(value: Any) -> Any:
    """``value`` with every tensor as a numpy array (dicts and lists walked)."""
    if isinstance(value, _Tensor):
        return value.array()
    if isinstance(value, dict):
        return {k: _tensors(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_tensors(v) for v in value)
    return value


def load_legacy(path: Path) -> Any:
    """The object a legacy ``torch.save`` file holds, its tensors as numpy arrays.

    Raises:
        ModelUnavailable: not such a file, a class it may not hold, or truncated.
    """
    try:
        with path.open("rb") as f:
            if pickle.load(f) != MAGIC or pickle.load(f) != PROTOCOL:  # noqa: S301 - plain ints
                raise ModelUnavailable(f"{path} is not a legacy PyTorch file")
            _Unpickler(f).load()  # system info: only plain values are allowed in
            unpickler = _Unpickler(f)
            result = unpickler.load()
            keys = _Unpickler(f).load()
            for key in keys:
                storage = unpickler.storages[key]
                (count,) = struct.unpack("<q", f.read(8))
                if count != storage.numel:
                    raise ModelUnavailable(f"{path}: storage {key} has {count} elements")
                width = np.dtype(storage.dtype).itemsize
                raw = f.read(count * width)
                if len(raw) != count * width:
                    raise ModelUnavailable(f"{path} is truncated")
                storage.data = np.frombuffer(raw, dtype=np.dtype(storage.dtype).newbyteorder("<"))
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, struct.error) as exc:
        raise ModelUnavailable(f"cannot read {path}: {exc}") from exc
    return _tensors(result)
