"""The few ONNX messages a hand-built graph needs, written in protobuf's wire format.

onnxruntime reads a model as ``onnx.ModelProto`` bytes. The ``onnx`` package writes them
too, but weighs 30 MB for what is here a few dozen lines: the fields are those of
``onnx/onnx.proto`` (field numbers in the comments), each written as protobuf writes it
(``tests/unit/test_minilm.py`` reads the bytes back with ``onnx`` where it is installed).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

FLOAT, INT32, INT64 = 1, 6, 7  # TensorProto.DataType
_DTYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.int32): INT32, np.dtype(np.int64): INT64}


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # a negative int64 as its two's complement, as protobuf writes it
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _int(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _bytes(field: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _all(field: int, payloads: Iterable[bytes | str]) -> bytes:
    return b"".join(_bytes(field, p) for p in payloads)


def node_proto(
    op: str, inputs: Sequence[str], output: str, domain: str = "", **attrs: float
) -> bytes:
    """A NodeProto (input 1, output 2, op_type 4, attribute 5, domain 7).

    ``attrs`` are ints or floats (AttributeProto: name 1, f 2, i 3, type 20).
    """
    attributes = [
        _bytes(1, name)
        + (
            _int(3, v) + _int(20, 2)
            if isinstance(v, int)
            else _varint(2 << 3 | 5) + struct.pack("<f", v) + _int(20, 1)
        )
        for name, v in attrs.items()
    ]
    return (
        _all(1, inputs)
        + _bytes(2, output)
        + _bytes(4, op)
        + _all(5, attributes)
        + _bytes(7, domain)
    )


def tensor_proto(name: str, array: np.ndarray) -> bytes:
    """A TensorProto (dims 1, data_type 2, name 8, raw_data 9), little-endian."""
    data = np.ascontiguousarray(array, array.dtype.newbyteorder("<"))
    dims = b"".join(_int(1, d) for d in data.shape)
    return dims + _int(2, _DTYPES[data.dtype]) + _bytes(8, name) + _bytes(9, data.tobytes())


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> bytes:
    """A ValueInfoProto (name 1, type 2) of a tensor; a str in ``shape`` is a named dim."""
    dims = [_int(1, d) if isinstance(d, int) else _bytes(2, d) for d in shape]
    tensor_type = _int(1, elem_type) + _bytes(2, _all(1, dims))
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def model_proto(
    nodes: Sequence[bytes],
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    initializers: Sequence[bytes],
    opsets: dict[str, int],
) -> bytes:
    """A ModelProto (ir_version 1, graph 7, opset_import 8) of IR version 8."""
    graph = (
        _all(1, nodes)
        + _bytes(2, "semrag")
        + _all(5, initializers)
        + _all(11, inputs)
        + _all(12, outputs)
    )
    opset_import = _all(8, [_bytes(1, d) + _int(2, v) for d, v in opsets.items()])
    return _int(1, 8) + _bytes(7, graph) + opset_import
