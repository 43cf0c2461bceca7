#!/usr/bin/env python3
"""Turns Resemblyzer's pretrained.pt (a legacy PyTorch pickle) into the flat weights file syncupsd reads.

No torch needed: the legacy format is five pickles (magic, protocol, system info, the object with persistent
ids for its storages, the storage keys) followed by each storage's raw bytes (an int64 count, then the data).

    ge2e_convert.py pretrained.pt ge2e.weights

The output ("SUVGE2E1", little-endian): uint32 tensor count; per tensor: uint16 name length, the name (UTF-8),
uint32 rank, uint32 dims, float32 data in row-major order. Only the LSTM and linear weights are written.
"""
import pickle
import struct
import sys
from array import array

MAGIC = b"SUVGE2E1"
WANTED = [
    "lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0", "lstm.bias_hh_l0",
    "lstm.weight_ih_l1", "lstm.weight_hh_l1", "lstm.bias_ih_l1", "lstm.bias_hh_l1",
    "lstm.weight_ih_l2", "lstm.weight_hh_l2", "lstm.bias_ih_l2", "lstm.bias_hh_l2",
    "linear.weight", "linear.bias",
]
SHAPES = {
    "lstm.weight_ih_l0": (1024, 40), "linear.weight": (256, 256), "linear.bias": (256,),
    **{f"lstm.weight_ih_l{i}": (1024, 256) for i in (1, 2)},
    **{f"lstm.weight_hh_l{i}": (1024, 256) for i in range(3)},
    **{f"lstm.bias_{k}_l{i}": (1024,) for i in range(3) for k in ("ih", "hh")},
}


class Storage:
    def __init__(self, key, dtype):
        self.key, self.dtype, self.data = key, dtype, None


class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def values(self):
        """Row-major float32 values (the weights here are contiguous; anything else is refused)."""
        expected, acc = [], 1
        for dim in reversed(self.size):
            expected.insert(0, acc)
            acc *= dim
        if self.stride != tuple(expected):
            raise ValueError(f"non-contiguous tensor {self.size} {self.stride}")
        return self.storage.data[self.offset:self.offset + acc]


def rebuild_tensor(storage, offset, size, stride, *rest):
    return Tensor(storage, offset, size, stride)


class Unpickler(pickle.Unpickler):
    def __init__(self, file, storages):
        super().__init__(file)
        self.storages = storages

    def find_class(self, module, name):
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return rebuild_tensor
        if module == "torch" and name == "FloatStorage":
            return "float32"
        if module == "collections" and name == "OrderedDict":
            import collections
            return collections.OrderedDict
        if module == "torch" and name.endswith("Storage"):
            return name
        raise pickle.UnpicklingError(f"unexpected class {module}.{name}")

    def persistent_load(self, pid):
        kind, dtype, key, _location, _size = pid[:5]
        if kind != "storage":
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        return self.storages.setdefault(key, Storage(key, dtype))


def load_legacy(path):
    with open(path, "rb") as f:
        magic = pickle.load(f)
        if magic != 0x1950A86A20F9469CFC6C:
            raise ValueError("not a legacy PyTorch file")
        pickle.load(f)  # protocol version
        info = pickle.load(f)
        if not info.get("little_endian", True):
            raise ValueError("big-endian weights")
        storages = {}
        result = Unpickler(f, storages).load()
        keys = pickle.load(f)
        for key in keys:
            storage = storages[key]
            if storage.dtype != "float32":
                # Storages the state dict does not use are read past all the same.
                pass
            (count,) = struct.unpack("<q", f.read(8))
            width = 4 if storage.dtype == "float32" else 8
            raw = f.read(count * width)
            if len(raw) != count * width:
                raise ValueError("truncated storage")
            if storage.dtype == "float32":
                storage.data = array("f")
                storage.data.frombytes(raw)
    return result


def main():
    source, target = sys.argv[1:3]
    state = load_legacy(source)["model_state"]
    out = bytearray(MAGIC)
    out += struct.pack("<I", len(WANTED))
    for name in WANTED:
        tensor = state[name]
        if tensor.size != SHAPES[name]:
            raise ValueError(f"{name}: shape {tensor.size}, expected {SHAPES[name]}")
        encoded = name.encode()
        out += struct.pack("<H", len(encoded)) + encoded
        out += struct.pack("<I", len(tensor.size)) + struct.pack(f"<{len(tensor.size)}I", *tensor.size)
        values = tensor.values()
        if sys.byteorder != "little":
            values.byteswap()
        out += values.tobytes()
    with open(target + ".tmp", "wb") as f:
        f.write(out)
    import os
    os.replace(target + ".tmp", target)


if __name__ == "__main__":
    main()
