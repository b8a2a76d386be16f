"""The worker protocol: value trees survive the trip exactly; nothing is ever unpickled."""

from __future__ import annotations

import io
import json
import math
import struct
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from graders.worker import protocol

DTYPES = [np.dtype(t) for t in ("float32", "float64", "int32", "int8", "uint16", "bool")]


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
    if draw(st.booleans()):  # bfloat16 from arbitrary bit patterns, NaNs included
        bits = draw(hnp.arrays(np.uint16, shape))
        return bits.view(ml_dtypes.bfloat16)
    return draw(hnp.arrays(draw(st.sampled_from(DTYPES)), shape))


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
    arrays().map(lambda a: a.reshape(-1)[0] if a.size else np.float32(0.5)),  # numpy scalars
)
trees = st.recursive(
    st.one_of(scalars, arrays()),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=5), children, max_size=3),
    ),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal with exact types: tuples are not lists, NaN equals NaN, arrays bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray | np.generic):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@given(trees)
def test_every_value_tree_round_trips_exactly(value: Any) -> None:
    assert same(protocol.unpack_message(protocol.pack_message(value)), value)


def test_tuples_and_lists_come_back_as_themselves() -> None:
    value = {"t": (1, [2, (3,)]), "l": [(), []]}
    back = protocol.unpack_message(protocol.pack_message(value))
    assert back == value
    assert type(back["t"]) is tuple and type(back["t"][1]) is list
    assert type(back["t"][1][1]) is tuple and type(back["l"][0]) is tuple


def test_bfloat16_arrays_and_scalars_keep_their_dtype() -> None:
    x = np.array([[1.5, -2.0], [np.inf, np.nan]], dtype=ml_dtypes.bfloat16)
    back = protocol.unpack_message(protocol.pack_message((x, x[0, 0])))
    assert back[0].dtype == ml_dtypes.bfloat16 and back[0].tobytes() == x.tobytes()
    assert type(back[1]) is type(x[0, 0]) and float(back[1]) == 1.5


def test_numpy_scalars_stay_numpy_scalars() -> None:
    back = protocol.unpack_message(protocol.pack_message([np.float32(2.5), np.float64(1.0),
                                                          np.bool_(True), np.int8(-3)]))
    assert [type(v) for v in back] == [np.float32, np.float64, np.bool_, np.int8]


def test_messages_frame_back_to_back_on_a_stream() -> None:
    stream = io.BytesIO(protocol.pack_message({"a": 1}) + protocol.pack_message((2, 3)))
    assert protocol.read_message(stream) == {"a": 1}
    assert protocol.read_message(stream) == (2, 3)
    with pytest.raises(EOFError):
        protocol.read_message(stream)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (object(), ["'object'"]),
        ({"k": [1, {2: 3}]}, ["'int'", "['k'][1]", "dict keys must be str"]),
        (np.array([object()]), ["ndarray[object]"]),
        (np.zeros(2, dtype=[("a", "i4")]), ["ndarray["]),
        ({1, 2}, ["'set'"]),
        (1 + 2j, ["'complex'"]),
    ],
)
def test_values_outside_the_protocol_name_their_type_and_place(
    value: Any, words: list[str]
) -> None:
    with pytest.raises(protocol.EncodeError) as info:
        protocol.pack_message(value)
    for word in words:
        assert word in str(info.value)


def test_a_tree_that_contains_itself_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(protocol.EncodeError, match="contains itself"):
        protocol.pack_message(loop)


def _message(header: dict[str, Any], blob: bytes = b"") -> bytes:
    head = json.dumps(header).encode()
    return protocol.PREFIX.pack(protocol.MAGIC, len(head), len(blob)) + head + blob


def test_a_pickled_object_array_is_refused_not_unpickled() -> None:
    blob = io.BytesIO()
    np.savez(blob, a0=np.array([{"evil": 1}], dtype=object))
    data = _message({"v": 1, "tree": {"array": "a0", "dtype": "|O"}}, blob.getvalue())
    with pytest.raises(protocol.ProtocolError):
        protocol.unpack_message(data)


@pytest.mark.parametrize(
    "data",
    [
        b"XXXX" + b"\0" * 16,
        protocol.PREFIX.pack(protocol.MAGIC, 2**40, 0),
        _message({"v": 2, "tree": 1}),
        _message({"v": 1, "tree": {"bogus": 1}}),
        _message({"v": 1, "tree": {"array": "a0", "dtype": "<f4"}}),
        _message({"v": 1}),
        protocol.PREFIX.pack(protocol.MAGIC, 5, 0) + b"{not json",
        _message({"v": 1, "tree": 1}, b"not a zip file"),
    ],
)
def test_malformed_messages_raise_protocol_errors(data: bytes) -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.unpack_message(data)


def test_a_stream_that_ends_inside_a_message_is_an_error() -> None:
    data = protocol.pack_message([1, 2, 3])
    with pytest.raises(protocol.ProtocolError):
        protocol.read_message(io.BytesIO(data[:-1]))
    with pytest.raises(protocol.ProtocolError):
        protocol.read_message(io.BytesIO(data[:5]))


def test_the_prefix_announces_the_whole_frame() -> None:
    data = protocol.pack_message({"x": np.arange(3)})
    assert protocol.frame_size(data[: protocol.PREFIX_SIZE]) == len(data)
    magic, _, _ = struct.unpack(">4sQQ", data[: protocol.PREFIX_SIZE])
    assert magic == protocol.MAGIC
