"""Reply budgets: a reply is checked against what its call may return before it is decoded.

The worker is untrusted and can be made to send any bytes with a valid signature
(docs/security.md, "The channel"), so everything here builds replies by hand: frames
whose prefix announces too much, .npz blobs whose zip directory or .npy headers lie,
value trees that use one array many times. Each must be refused with
``ReplyRefused`` (over the budget, before anything is allocated) or ``ProtocolError``
(malformed), never ``MemoryError`` or a numpy error.
"""

from __future__ import annotations

import io
import json
import re
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

from graders.worker import protocol
from graders.worker.client import Worker
from graders.worker.protocol import ProtocolError, ReplyBudget, ReplyRefused

MiB = 1024 * 1024
SMALL = ReplyBudget(header_bytes=4096, array_bytes=4096, arrays=4, elements=4096)


def frame(tree: object, blob: bytes = b"") -> bytes:
    """A framed message with this JSON value tree and this blob, as a forger would build."""
    header = json.dumps({"v": 1, "tree": tree}).encode()
    return protocol.PREFIX.pack(protocol.MAGIC, len(header), len(blob)) + header + blob


def npy(descr: object, shape: tuple[int, ...], data: bytes, *, version: int = 1) -> bytes:
    """A .npy member whose header says ``descr`` and ``shape`` and whose data is ``data``."""
    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {shape!r}, }}"
    text += " " * (-(len(text) + 11) % 64) + "\n"
    size = len(text).to_bytes(2 if version == 1 else 4, "little")
    return b"\x93NUMPY" + bytes([version, 0]) + size + text.encode() + data


def blob(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def array_node(name: str = "a0", dtype: str = "<f8") -> dict[str, str]:
    return {"array": name, "dtype": dtype}


def test_the_default_budget_follows_the_documented_rule() -> None:
    request = protocol.pack_message({"args": (np.zeros(1000), 3), "kwargs": {}})
    _, header_len, blob_len = protocol.PREFIX.unpack(request[:protocol.PREFIX_SIZE])
    budget = ReplyBudget.for_request(request, 1, expected_array_bytes=100)
    assert budget.header_bytes == 1 * MiB + 4 * header_len
    assert budget.array_bytes == 4 * MiB + 4 * blob_len + 100
    assert budget.arrays == 4096 + 4 and budget.elements == budget.array_bytes
    assert budget.dims == 8 and budget.trace_calls == 256


def test_every_honest_value_fits_the_budget_of_its_own_request() -> None:
    x = np.arange(256 * 256, dtype=np.float32).reshape(256, 256)
    request = protocol.pack_message({"args": (x, x), "kwargs": {}})
    budget = ReplyBudget.for_request(request, 2)
    value = {"sum": (x + x).astype(np.float64), "list": [x.T, x[::2]], "n": 3}
    back = protocol.unpack_message(protocol.pack_message(value), budget)
    assert np.array_equal(back["sum"], value["sum"]) and back["list"][0].flags.f_contiguous
    assert back["sum"].flags.writeable, "checks may write into what they get back"


@pytest.mark.parametrize("header_len, blob_len, words", [
    (96 * MiB, 0, "its JSON header is 96.0 MiB; at most 4.0 KiB is expected"),
    (10, 3 * MiB, "its arrays take 3.0 MiB; at most 6.0 KiB is expected"),
])
def test_a_prefix_announcing_more_than_the_budget_is_refused_before_reading(
        header_len: int, blob_len: int, words: str) -> None:
    prefix = protocol.PREFIX.pack(protocol.MAGIC, header_len, blob_len)
    with pytest.raises(ReplyRefused, match=words.replace(".", r"\.")):
        protocol.frame_size(prefix, SMALL)


def test_an_npy_header_claiming_terabytes_is_refused_before_allocation() -> None:
    data = frame(array_node(), blob({"a0.npy": npy("<f8", (2**40,), b"\0" * 64)}))
    with pytest.raises(ReplyRefused, match=r"float64\[1099511627776\] \(8\.0 TiB\)"):
        protocol.unpack_message(data, SMALL)
    with pytest.raises(ReplyRefused):  # the protocol's own ceiling applies without a budget
        protocol.unpack_message(data)


@pytest.mark.parametrize("shape, words", [
    ((0, 10**12), "declared as float64"),          # no bytes, but a dimension no input allows
    ((1,) * 9, "has 9 dimensions; at most 8"),
    ((600,), "declared as float64\\[600\\]"),        # 4800 B over a 4096 B budget
])
def test_shapes_the_budget_does_not_allow_are_refused(shape: tuple[int, ...], words: str
                                                      ) -> None:
    count = int(np.prod(shape))
    data = frame(array_node(), blob({"a0.npy": npy("<f8", shape, b"\0" * 8 * count)}))
    with pytest.raises(ReplyRefused, match=words):
        protocol.unpack_message(data, SMALL)


def test_more_arrays_than_the_budget_allows_are_refused() -> None:
    members = {f"a{i}.npy": npy("|u1", (1,), b"\0") for i in range(5)}
    tree = {"list": [array_node(f"a{i}", "|u1") for i in range(5)]}
    with pytest.raises(ReplyRefused, match="it holds 5 arrays; at most 4"):
        protocol.unpack_message(frame(tree, blob(members)), SMALL)


@pytest.mark.parametrize("members, words", [
    ({"a0.npy": npy("<f8", (4,), b"\0" * 8)}, "declares 32 bytes of data but holds 8"),
    ({"a0.npy": npy("|O", (1,), b"\0" * 8)}, "dtype object"),
    ({"a0.npy": npy([("x", "<f8")], (1,), b"\0" * 8)}, "which is not sent"),
    ({"a0.npy": b"not an npy file at all"}, "malformed .npy header"),
    ({"a0.npy": npy("<f8", (1,), b"\0" * 8, version=3)}, "format version"),
    ({"../a0.npy": npy("<f8", (1,), b"\0" * 8)}, "unexpected member"),
])
def test_members_that_lie_are_malformed(members: dict[str, bytes], words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        protocol.unpack_message(frame(array_node(), blob(members)), SMALL)


def test_compressed_members_are_refused_so_no_zip_bomb_expands() -> None:
    member = npy("<f8", (512,), b"\0" * 8 * 512)  # 4 KiB of zeros deflate to a few bytes
    data = frame(array_node(), blob({"a0.npy": member}, zipfile.ZIP_DEFLATED))
    with pytest.raises(ProtocolError, match="compressed or encrypted"):
        protocol.unpack_message(data, ReplyBudget.ceiling())


def test_one_array_used_many_times_is_refused() -> None:
    members = {"a0.npy": npy("<f8", (512,), b"\0" * 8 * 512)}
    tree = {"list": [array_node()] * 1000}  # np.asarray of it would be 1000 copies
    budget = ReplyBudget(header_bytes=MiB, array_bytes=MiB, arrays=4, elements=MiB)
    with pytest.raises(ProtocolError, match="used more than once"):
        protocol.unpack_message(frame(tree, blob(members)), budget)


def test_arrays_the_value_does_not_use_are_refused() -> None:
    members = {"a0.npy": npy("<f8", (1,), b"\0" * 8), "a1.npy": npy("<f8", (1,), b"\0" * 8)}
    with pytest.raises(ProtocolError, match=r"does not use: \['a1'\]"):
        protocol.unpack_message(frame(array_node(), blob(members)), SMALL)


def test_a_corrupted_member_fails_its_crc() -> None:
    good = blob({"a0.npy": npy("<f8", (2,), b"\x01" * 16)})
    bad = good.replace(b"\x01" * 16, b"\x02" * 16)
    with pytest.raises(ProtocolError, match="Bad CRC-32"):
        protocol.unpack_message(frame(array_node(), bad), SMALL)


# -- through the real worker ----------------------------------------------------------------

SUBMISSION = """
import numpy as np
from pallas_sim import pl


def big(n):
    return np.zeros(n, np.float64)


def small(n):
    return n + 1


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def many_calls(n):
    x = np.ones((8, 128), np.float32)
    for _ in range(n):
        x = pl.pallas_call(_copy, out_shape=x)(x)
    return x
"""


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Worker:
    folder = tmp_path_factory.mktemp("budget")
    path = Path(folder) / "t9_fake.py"
    path.write_text(textwrap.dedent(SUBMISSION), encoding="utf-8")
    with Worker(path, timeout=20.0) as w:
        assert w.load_result is not None and w.load_result.ok, w.load_result
        yield w


def test_a_reply_over_its_budget_fails_that_call_and_the_next_call_works(worker: Worker
                                                                          ) -> None:
    result = worker.call("big", (10**6,))  # 8 MB of float64 for a request of a few bytes
    assert not result.ok and result.error is not None
    assert result.error.kind == "oversize", result.error
    assert result.error.message.startswith("the reply of big was refused: its arrays take "
                                           "7.6 MiB; at most 6.0 MiB is expected"), result.error
    assert worker.call("small", (1,)).value == 2, "the worker restarts for the next call"


def test_a_check_can_allow_a_reply_larger_than_its_inputs(worker: Worker) -> None:
    result = worker.call("big", (10**6,), reply_bytes=8 * 10**6)
    assert result.ok and result.value.shape == (10**6,), result.error


def test_more_pallas_calls_than_a_reply_may_record_are_refused(worker: Worker) -> None:
    assert worker.call("many_calls", (3,)).ok
    result = worker.call("many_calls", (protocol.MAX_TRACE_CALLS + 1,))
    assert not result.ok and result.error is not None and result.error.kind == "oversize"
    assert "it records 257 pallas_calls; at most 256" in result.error.message, result.error


# -- trace records -------------------------------------------------------------------------------

def _record() -> dict:
    import pallas_sim
    from pallas_sim import pl

    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    x = np.ones((16, 256), np.float32)
    with pallas_sim.trace() as recorded:
        pl.pallas_call(copy, out_shape=x, grid=(2, 2),
                       in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
                       out_specs=pl.BlockSpec((8, 128), lambda i, j: (i, j)))(x)
    return recorded.calls[-1].to_dict()


def test_an_honest_trace_record_reads_back() -> None:
    from graders.checking.framework import _to_call_traces

    (call,) = _to_call_traces((_record(),))
    assert call.num_steps == 4 and call.operands[0].block_indices.shape == (4, 2)


@pytest.mark.parametrize("corrupt, words", [
    (lambda r: r["operands"][0].update(block_indices=np.zeros((0, 0), np.int32)),
     "block indices of shape (0, 0)"),
    (lambda r: r.update(num_steps=10**9), "records 1000000000 steps"),
    (lambda r: r.update(grid=[2] * 1000), "a grid of 1000 dimensions"),
    (lambda r: r["operands"][0].update(kernel_reads=np.zeros(3, np.int32)), "3 read counts"),
])
def test_trace_records_that_contradict_themselves_are_refused(corrupt, words: str) -> None:
    from graders.checking.framework import _to_call_traces

    record = _record()
    corrupt(record)
    with pytest.raises(ValueError, match=re.escape(words)):
        _to_call_traces((record,))
