"""Values <-> bytes for the grader/worker pipe: one JSON header plus one ``.npz`` blob.

This module is shared by both sides of the trusted/untrusted split (docs/grading-design.md,
"Trusted and untrusted code"): the trusted grader imports it as
``graders.worker.protocol`` and the worker gets a copy named
``pallas_lab_protocol``. It therefore imports only the standard library, numpy
and ml_dtypes, and nothing in it ever unpickles: arrays travel through
``np.savez`` and come back through ``np.load(..., allow_pickle=False)``.

Value trees
-----------
A value tree is built from ``None``, ``bool``, ``int``, ``float``, ``str``,
``list``, ``tuple``, ``dict`` with ``str`` keys, numpy arrays (numeric, bool,
string, and ml_dtypes dtypes such as ``bfloat16``) and numpy scalars. In the
JSON header, ``None``/``bool``/``int``/``str``/finite ``float`` are themselves;
every JSON object is a tag with exactly one key:

``{"list": [...]}``, ``{"tuple": [...]}``, ``{"dict": {...}}``,
``{"float": "nan" | "inf" | "-inf"}``, ``{"array": name, "dtype": tag}`` and
``{"scalar": name, "dtype": tag}`` where ``name`` is a member of the ``.npz``
blob and ``tag`` the dtype's name (``"bfloat16"`` arrays are stored as their
``uint16`` bit pattern, because ``np.savez`` cannot write ml_dtypes dtypes).

Framing
-------
A message is ``MAGIC`` (4 bytes), the header length and the blob length (two
unsigned 64-bit big-endian integers), the UTF-8 JSON header, then the blob
(empty when the value holds no arrays).

Reply budgets
-------------
A reply is validated before it is decoded (docs/security.md, "The channel"): the
grader gives every exchange a ``ReplyBudget`` (JSON header bytes, array bytes,
number of arrays, dimensions, elements, pallas_call records), derived by
``ReplyBudget.for_request`` from what the request sent plus what the check
expects. ``frame_size`` refuses a prefix announcing more than the budget before
the rest is read; ``unpack_message`` then checks the zip directory of the blob
and every ``.npy`` member's header (dtype, shape, declared size equal to the
bytes present) before any array is allocated. Each array member is used exactly
once by the value tree. Anything over the budget raises ``ReplyRefused``.

Signed replies
--------------
The grader's first message to a new worker is ``{"op": "hello", "key": hex}``
with a fresh random key of ``KEY_BYTES`` bytes, sent before the submission is
loaded. Every message the worker sends (the ``ready`` message is number 0) is
followed by ``TAG_BYTES`` bytes of ``reply_tag(key, number, message)``; the
grader drops a worker whose reply does not carry the right tag, so bytes that
the submission writes to the channel cannot pass for a reply
(docs/security.md, "The channel").
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import io
import json
import math
import re
import struct
import zipfile
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

MAGIC = b"PLW1"
PREFIX = struct.Struct(">4sQQ")
PREFIX_SIZE = PREFIX.size

MiB = 1024 * 1024
#: Largest message either side accepts, in bytes (header + blob): the ceiling of every budget.
MAX_MESSAGE_BYTES = 512 * MiB
#: Largest total of the uncompressed array members of one blob.
MAX_ARRAY_BYTES = 512 * MiB
#: Deepest nesting of lists/tuples/dicts a value tree may have.
MAX_DEPTH = 64
#: Most dimensions any array of a reply may have (numpy allows 64; the course uses <= 4).
MAX_DIMS = 8
#: Most pallas_call records one reply may carry (a wrapper makes one).
MAX_TRACE_CALLS = 256
#: Bytes an array member may add to the blob beyond its data: zip local and central
#: directory entries (~100 B with its name) and the .npy header (64-128 B, padded).
MEMBER_OVERHEAD_BYTES = 512
#: The default reply budget of a call (``ReplyBudget.for_request``): a floor for small
#: calls plus a multiple of what the request itself sent.
REPLY_HEADER_FLOOR = 1 * MiB
REPLY_ARRAY_FLOOR = 4 * MiB
REPLY_ARRAYS_FLOOR = 4096
REPLY_FACTOR = 4

_HEADER_VERSION = 1

#: Bytes of the per-worker key that signs replies, and of each reply's tag.
KEY_BYTES = 32
TAG_BYTES = 32


def reply_tag(key: bytes, number: int, message: bytes) -> bytes:
    """HMAC-SHA256 over the reply's sequence ``number`` (8 bytes, big-endian) and its bytes.

    The number binds a reply to its place in the conversation, so a genuine
    reply cannot be replayed for a later request.
    """
    return hmac.new(key, number.to_bytes(8, "big") + message, hashlib.sha256).digest()

# ml_dtypes dtypes travel as their bit pattern in an unsigned integer of the same size.
_ML_NAMES = (
    "bfloat16",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "int4",
    "uint4",
)


@functools.cache
def _ml_dtypes() -> dict[str, np.dtype]:
    """Tag -> dtype of the ml_dtypes dtypes this ml_dtypes has. Imported when the first
    array is packed or unpacked: ml_dtypes takes most of a second to import (it registers
    its casts and loops with numpy), which a process that never handles an array (the
    command line's main process in a batch) should not pay."""
    import ml_dtypes

    return {name: np.dtype(getattr(ml_dtypes, name)) for name in _ML_NAMES
            if hasattr(ml_dtypes, name)}


_BITS_DTYPE = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16)}

# Plain numpy dtype kinds that np.savez writes without pickling.
_PLAIN_KINDS = frozenset("biufcUS")


class ProtocolError(ValueError):
    """A message or value tree that breaks the protocol (bad framing, bad tag, bad array)."""


class ReplyRefused(ProtocolError):
    """A reply that announces or declares more than its ``ReplyBudget`` allows; raised before
    the excess is read or allocated. The message names the size and the budget."""


def fmt_bytes(n: int) -> str:
    """``512 B``, ``4.0 KiB``, ``96.0 MiB``, ``8.0 TiB`` (binary units, one decimal)."""
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        size /= 1024
        if size < 1024 or unit == "EiB":
            return f"{size:.1f} {unit}"
    return f"{n} B"  # pragma: no cover - the loop always returns


@dataclass(frozen=True)
class ReplyBudget:
    """What one reply may hold, checked before anything in it is decoded.

    ``header_bytes``: the JSON header; ``array_bytes``: the declared data of all arrays
    together; ``arrays``: how many arrays (npz members); ``elements``: elements over all
    arrays, also the largest any one dimension may be; ``dims``: dimensions of any array;
    ``trace_calls``: pallas_call records of a call reply. ``blob_bytes`` adds the
    per-member container overhead to ``array_bytes``.
    """

    header_bytes: int
    array_bytes: int
    arrays: int
    elements: int
    dims: int = MAX_DIMS
    trace_calls: int = MAX_TRACE_CALLS

    @property
    def blob_bytes(self) -> int:
        """Bytes the .npz blob may take: the array data plus each member's headers."""
        return self.array_bytes + self.arrays * MEMBER_OVERHEAD_BYTES if self.arrays else 0

    @classmethod
    def for_request(cls, request: bytes, arrays: int, *, expected_array_bytes: int = 0
                    ) -> ReplyBudget:
        """The documented default budget of the reply to ``request``.

        ``request`` is a packed message holding ``arrays`` arrays; ``expected_array_bytes``
        is what the check expects a correct reply to hold beyond it (e.g. an output larger
        than the inputs):

        * JSON header: 1 MiB + 4 x the request's JSON header;
        * arrays: 4 MiB + 4 x the request's array blob + ``expected_array_bytes``,
          and as many elements as bytes (no dtype here has items under one byte);
        * number of arrays: 4096 + 4 x the request's arrays; at most 8 dimensions;
          at most 256 pallas_call records;

        every figure capped at ``MAX_MESSAGE_BYTES``. Raises ``ProtocolError`` when
        ``request`` is not a framed message.
        """
        if len(request) < PREFIX_SIZE:
            raise ProtocolError("the request is not a framed message")
        _, header_len, blob_len = PREFIX.unpack(request[:PREFIX_SIZE])
        header = min(REPLY_HEADER_FLOOR + REPLY_FACTOR * header_len, MAX_MESSAGE_BYTES)
        data = min(REPLY_ARRAY_FLOOR + REPLY_FACTOR * blob_len + max(0, expected_array_bytes),
                   MAX_ARRAY_BYTES)
        return cls(header_bytes=header, array_bytes=data,
                   arrays=REPLY_ARRAYS_FLOOR + REPLY_FACTOR * arrays, elements=data)

    @classmethod
    def small(cls) -> ReplyBudget:
        """The budget of a reply that carries no arrays (ready, load): a 1 MiB header."""
        return cls(header_bytes=REPLY_HEADER_FLOOR, array_bytes=0, arrays=0, elements=0,
                   trace_calls=0)

    @classmethod
    def ceiling(cls) -> ReplyBudget:
        """The protocol's own limits, for messages from the trusted side (requests)."""
        return cls(header_bytes=MAX_MESSAGE_BYTES, array_bytes=MAX_ARRAY_BYTES,
                   arrays=MAX_MESSAGE_BYTES // MEMBER_OVERHEAD_BYTES,
                   elements=MAX_ARRAY_BYTES, dims=64)


def count_arrays(value: Any) -> int:
    """Number of numpy arrays and scalars in a value tree (what ``encode_tree`` stores)."""
    if isinstance(value, np.ndarray | np.generic):
        return 1
    if isinstance(value, list | tuple):
        return sum(count_arrays(item) for item in value)
    if isinstance(value, dict):
        return sum(count_arrays(item) for item in value.values())
    return 0


class EncodeError(ProtocolError):
    """A value that cannot be sent: names the offending type and where it sits in the tree.

    Attributes: ``type_name`` (the Python type's name), ``path`` (e.g. ``"[1]['m']"``).
    """

    def __init__(self, type_name: str, path: str, detail: str = "") -> None:
        where = f" at {path}" if path else ""
        extra = f" ({detail})" if detail else ""
        super().__init__(f"a value of type '{type_name}'{where} cannot be sent{extra}")
        self.type_name = type_name
        self.path = path


def _dtype_tag(dtype: np.dtype) -> str:
    for name, ml in _ml_dtypes().items():
        if dtype == ml:
            return name
    if dtype.kind not in _PLAIN_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"dtype {dtype} is not supported")
    return dtype.str  # e.g. "<f4", "|b1", "<U5": endianness and size included


def _to_storable(array: np.ndarray, tag: str) -> np.ndarray:
    if tag in _ml_dtypes():
        contiguous = array if array.flags.c_contiguous else array.copy(order="C")
        return contiguous.view(_BITS_DTYPE[array.dtype.itemsize])
    return array


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._active: set[int] = set()

    def _store(self, array: np.ndarray, path: str, kind: str) -> dict[str, str]:
        try:
            tag = _dtype_tag(array.dtype)
        except ValueError as exc:
            raise EncodeError(f"ndarray[{array.dtype}]", path, str(exc)) from None
        name = f"a{len(self.arrays)}"
        self.arrays[name] = _to_storable(array, tag)
        return {kind: name, "dtype": tag}

    def encode(self, value: Any, path: str, depth: int) -> Any:
        # numpy first: np.float64 is also a float, and np.bool_ is not a bool.
        if isinstance(value, np.ndarray):
            if type(value) is not np.ndarray:  # a subclass may override __eq__, __array_*__
                raise EncodeError(type(value).__name__, path,
                                  "a subclass of numpy.ndarray; return a plain array")
            return self._store(value, path, "array")
        if isinstance(value, np.generic):
            return self._store(np.asarray(value), path, "scalar")
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            value = float(value)
            if math.isfinite(value):
                return value
            return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
        if isinstance(value, list | tuple | dict):
            if depth >= MAX_DEPTH:
                raise EncodeError(type(value).__name__, path, f"nested deeper than {MAX_DEPTH}")
            if id(value) in self._active:
                raise EncodeError(type(value).__name__, path, "it contains itself")
            self._active.add(id(value))
            try:
                if isinstance(value, dict):
                    out: dict[str, Any] = {}
                    for key, item in dict.items(value):
                        if not isinstance(key, str):
                            raise EncodeError(
                                type(key).__name__, f"{path}[key {key!r}]", "dict keys must be str"
                            )
                        key = str.__str__(key)
                        out[key] = self.encode(item, f"{path}[{key!r}]", depth + 1)
                    return {"dict": out}
                kind = "list" if isinstance(value, list) else "tuple"
                items = list.__iter__(value) if kind == "list" else tuple.__iter__(value)
                return {
                    kind: [
                        self.encode(item, f"{path}[{i}]", depth + 1)
                        for i, item in enumerate(items)
                    ]
                }
            finally:
                self._active.discard(id(value))
        raise EncodeError(type(value).__name__, path)


def encode_tree(value: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """Split a value tree into a JSON-able node and the arrays it refers to.

    Returns ``(node, arrays)`` where ``arrays`` maps npz member names to arrays
    ready for ``np.savez`` (ml_dtypes arrays already viewed as unsigned ints).
    Raises ``EncodeError`` (naming the type and its path in the tree) for any
    value outside the supported set (subclasses of ``numpy.ndarray`` included),
    for object/structured dtypes, for cycles and for nesting deeper than
    ``MAX_DEPTH``.
    """
    encoder = _Encoder()
    node = encoder.encode(value, "", 0)
    return node, encoder.arrays


def _restore_array(stored: np.ndarray, tag: Any, name: str) -> np.ndarray:
    if not isinstance(tag, str):
        raise ProtocolError(f"array {name!r} has a malformed dtype tag {tag!r}")
    if tag in _ml_dtypes():
        dtype = _ml_dtypes()[tag]
        if stored.dtype != _BITS_DTYPE[dtype.itemsize]:
            raise ProtocolError(f"array {name!r} tagged {tag} is stored as {stored.dtype}")
        return stored.view(dtype)
    try:
        dtype = np.dtype(tag)
    except TypeError:
        raise ProtocolError(f"array {name!r} has an unknown dtype tag {tag!r}") from None
    if stored.dtype != dtype:
        raise ProtocolError(f"array {name!r} tagged {tag} is stored as {stored.dtype}")
    return stored


def decode_tree(node: Any, arrays: dict[str, np.ndarray], _depth: int = 0,
                _used: set[str] | None = None) -> Any:
    """Rebuild a value tree from ``encode_tree``'s node and arrays.

    Lists come back as lists and tuples as tuples; arrays keep their dtype
    (``bfloat16`` included); scalars come back as numpy scalars. Raises
    ``ProtocolError`` on any malformed node, unknown tag, missing array,
    mismatched dtype, or an array referred to twice (one array shown a million
    times would cost the grader a million copies the moment a check stacks
    them). Creates only plain Python values and numpy arrays.
    """
    used: set[str] = set() if _used is None else _used
    if _depth > MAX_DEPTH + 1:
        raise ProtocolError("value tree nested too deeply")
    if node is None or isinstance(node, bool | int | str):
        return node
    if isinstance(node, float):
        return node
    if not isinstance(node, dict) or len(node) not in (1, 2):
        raise ProtocolError(f"malformed node of type {type(node).__name__}")
    if len(node) == 1:
        ((tag, payload),) = node.items()
        if tag in ("list", "tuple"):
            if not isinstance(payload, list):
                raise ProtocolError(f"malformed {tag} node")
            items = [decode_tree(item, arrays, _depth + 1, used) for item in payload]
            return items if tag == "list" else tuple(items)
        if tag == "dict":
            if not isinstance(payload, dict):
                raise ProtocolError("malformed dict node")
            return {key: decode_tree(item, arrays, _depth + 1, used)
                    for key, item in payload.items()}
        if tag == "float":
            if payload not in ("nan", "inf", "-inf"):
                raise ProtocolError(f"malformed float node {payload!r}")
            return float(payload)
        raise ProtocolError(f"unknown node tag {tag!r}")
    kind = "array" if "array" in node else "scalar"
    name = node.get(kind)
    if "dtype" not in node or not isinstance(name, str):
        raise ProtocolError(f"malformed array node {sorted(node)!r}")
    if name not in arrays:
        raise ProtocolError(f"array {name!r} is missing from the blob")
    if name in used:
        raise ProtocolError(f"array {name!r} is used more than once in the value tree")
    used.add(name)
    array = _restore_array(arrays[name], node["dtype"], name)
    if kind == "scalar":
        if array.shape != ():
            raise ProtocolError(f"scalar {name!r} has shape {array.shape}")
        return array[()]
    return array


def _pack_arrays(arrays: dict[str, np.ndarray]) -> bytes:
    if not arrays:
        return b""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


_MEMBER = re.compile(r"a(0|[1-9][0-9]{0,9})\.npy")
_ALLOWED_KINDS = frozenset("biufcSU")
_NPY_HEADER_LIMIT = 10_000  # numpy's own default max_header_size


@dataclass(frozen=True)
class _Member:
    """One validated .npy member of a blob: where its data is and what it declares."""

    name: str
    info: zipfile.ZipInfo
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran: bool
    offset: int  # bytes of .npy header before the data
    nbytes: int


def _describe_declared(dtype: np.dtype, shape: tuple[int, ...], nbytes: int) -> str:
    dims = ", ".join(str(d) for d in shape)
    return f"{dtype.name}[{dims}] ({fmt_bytes(nbytes)})"


def _read_npy_header(member: BinaryIO, name: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """(dtype, shape, fortran_order, header bytes) of a .npy member, reading only its header.

    numpy's own header readers parse the header dict with ``ast.literal_eval`` (never
    ``eval``) and refuse headers longer than ``_NPY_HEADER_LIMIT`` bytes.
    """
    from numpy.lib import format as npy

    try:
        version = npy.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(
                member, max_header_size=_NPY_HEADER_LIMIT)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(
                member, max_header_size=_NPY_HEADER_LIMIT)
        else:
            raise ProtocolError(f"array {name!r} has .npy format version {version}")
        offset = member.tell()
    except (ValueError, TypeError, SyntaxError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ProtocolError(f"array {name!r} has a malformed .npy header: {exc}") from None
    return dtype, tuple(shape), bool(fortran), offset


def _validate_members(archive: zipfile.ZipFile, blob_len: int, budget: ReplyBudget
                      ) -> list[_Member]:
    """Check the zip directory and every .npy header against ``budget``; allocate nothing."""
    infos = archive.infolist()
    if len(infos) > budget.arrays:
        raise ReplyRefused(f"it holds {len(infos)} arrays; at most {budget.arrays} are "
                           "expected for these inputs")
    members: list[_Member] = []
    names: set[str] = set()
    total_bytes = total_elements = 0
    for info in infos:
        name = info.filename
        if not _MEMBER.fullmatch(name) or name[:-4] in names:
            raise ProtocolError(f"the array blob has an unexpected member {name[:40]!r}")
        names.add(name[:-4])
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            raise ProtocolError(f"array {name[:-4]!r} is compressed or encrypted; arrays "
                                "travel uncompressed")
        if info.file_size != info.compress_size or info.header_offset + info.compress_size \
                > blob_len:
            raise ProtocolError(f"array {name[:-4]!r} declares {info.file_size} bytes that "
                                "the blob does not hold")
        with archive.open(info) as member:
            dtype, shape, fortran, offset = _read_npy_header(member, name[:-4])
        if (dtype.hasobject or dtype.kind not in _ALLOWED_KINDS or dtype.fields is not None
                or dtype.subdtype is not None or dtype.itemsize == 0):
            raise ProtocolError(f"array {name[:-4]!r} has dtype {dtype}, which is not sent")
        if len(shape) > budget.dims:
            raise ReplyRefused(f"array {name[:-4]!r} has {len(shape)} dimensions; at most "
                               f"{budget.dims} are expected")
        if any(not isinstance(d, int) or d < 0 for d in shape):
            raise ProtocolError(f"array {name[:-4]!r} has the shape {shape!r}")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if max(shape, default=0) > budget.elements or total_elements + count > \
                budget.elements or total_bytes + nbytes > budget.array_bytes:
            raise ReplyRefused(
                f"array {name[:-4]!r} is declared as {_describe_declared(dtype, shape, nbytes)}"
                f"; at most {fmt_bytes(budget.array_bytes)} of arrays "
                f"({budget.elements} elements) is expected for these inputs")
        if info.file_size - offset != nbytes:
            raise ProtocolError(f"array {name[:-4]!r} declares {nbytes} bytes of data but "
                                f"holds {info.file_size - offset}")
        total_bytes += nbytes
        total_elements += count
        members.append(_Member(name[:-4], info, dtype, shape, fortran, offset, nbytes))
    return members


def _unpack_arrays(blob: bytes, budget: ReplyBudget | None = None) -> dict[str, np.ndarray]:
    """The arrays of an .npz blob, validated against ``budget`` before any is allocated.

    Raises ``ReplyRefused`` when the blob holds more arrays, dimensions, elements or
    bytes than the budget allows, and ``ProtocolError`` for anything malformed:
    not a zip, compressed or foreign members, headers that are not .npy 1.0/2.0,
    dtypes outside the protocol (objects, records), declared sizes that differ
    from the bytes present, or a bad CRC.
    """
    if not blob:
        return {}
    budget = budget or ReplyBudget.ceiling()
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise ProtocolError(f"the array blob is not a valid .npz file: {exc}") from None
    arrays: dict[str, np.ndarray] = {}
    try:
        with archive:
            for member in _validate_members(archive, len(blob), budget):
                with archive.open(member.info) as stream:
                    stream.read(member.offset)
                    data = bytearray(stream.read(member.nbytes))
                    stream.read(1)  # reaching the end checks the member's CRC
                if len(data) != member.nbytes:
                    raise ProtocolError(f"array {member.name!r} ends early")
                flat = np.frombuffer(data, dtype=member.dtype, count=math.prod(member.shape))
                arrays[member.name] = flat.reshape(member.shape,
                                                   order="F" if member.fortran else "C")
    except ProtocolError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise ProtocolError(f"the array blob could not be read: {exc}") from None
    return arrays


def pack_message(value: Any) -> bytes:
    """Encode a value tree as one framed message (prefix + JSON header + npz blob).

    Raises ``EncodeError`` for values that cannot be sent and ``ProtocolError``
    when the message would exceed ``MAX_MESSAGE_BYTES``.
    """
    node, arrays = encode_tree(value)
    header = json.dumps(
        {"v": _HEADER_VERSION, "tree": node}, allow_nan=False, separators=(",", ":")
    ).encode("utf-8")
    blob = _pack_arrays(arrays)
    if len(header) + len(blob) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(header) + len(blob)} bytes is too large")
    return PREFIX.pack(MAGIC, len(header), len(blob)) + header + blob


def frame_size(prefix: bytes, budget: ReplyBudget | None = None) -> int:
    """Total size in bytes of the message whose first ``PREFIX_SIZE`` bytes are ``prefix``.

    Raises ``ProtocolError`` for a wrong magic number or a message over the protocol's
    ceiling, and ``ReplyRefused`` when the header or the blob it announces is larger
    than ``budget`` allows (checked before the rest of the message is read).
    """
    if len(prefix) < PREFIX_SIZE:
        raise ProtocolError(f"message prefix has {len(prefix)} bytes, expected {PREFIX_SIZE}")
    magic, header_len, blob_len = PREFIX.unpack(prefix[:PREFIX_SIZE])
    if magic != MAGIC:
        raise ProtocolError(f"bad magic number {magic!r} (expected {MAGIC!r})")
    if budget is not None:
        if header_len > budget.header_bytes:
            raise ReplyRefused(f"its JSON header is {fmt_bytes(header_len)}; at most "
                               f"{fmt_bytes(budget.header_bytes)} is expected for these inputs")
        if blob_len > budget.blob_bytes:
            raise ReplyRefused(f"its arrays take {fmt_bytes(blob_len)}; at most "
                               f"{fmt_bytes(budget.blob_bytes)} is expected for these inputs")
    if header_len + blob_len > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {header_len + blob_len} bytes is too large")
    return PREFIX_SIZE + header_len + blob_len


def unpack_message(data: bytes, budget: ReplyBudget | None = None) -> Any:
    """Decode one complete framed message produced by ``pack_message``.

    With a ``budget`` (every reply the grader reads), the header, the zip directory and
    each array's .npy header are checked against it before anything is decoded or
    allocated (``ReplyRefused``). Raises ``ProtocolError`` for bad framing, trailing
    bytes, invalid JSON, an unknown header version, a malformed value tree, or arrays
    in the blob that the tree does not use exactly once.
    """
    size = frame_size(data, budget)
    if len(data) != size:
        raise ProtocolError(f"message has {len(data)} bytes, its prefix announces {size}")
    _, header_len, _ = PREFIX.unpack(data[:PREFIX_SIZE])
    header_bytes = data[PREFIX_SIZE : PREFIX_SIZE + header_len]
    blob = data[PREFIX_SIZE + header_len :]
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"the message header is not valid JSON: {exc}") from None
    if not isinstance(header, dict) or header.get("v") != _HEADER_VERSION or "tree" not in header:
        raise ProtocolError("the message header lacks version 1 and a value tree")
    arrays = _unpack_arrays(blob, budget)
    used: set[str] = set()
    try:
        value = decode_tree(header["tree"], arrays, 0, used)
    except RecursionError:
        raise ProtocolError("value tree nested too deeply") from None
    unused = sorted(set(arrays) - used)
    if unused:
        raise ProtocolError(f"the blob holds arrays the value does not use: {unused[:5]}")
    return value


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    chunks = []
    remaining = size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_message(stream: BinaryIO) -> Any:
    """Read one message from a blocking binary stream.

    Returns the decoded value tree. Raises ``EOFError`` when the stream ends
    cleanly before a message starts and ``ProtocolError`` when it ends
    mid-message or the message is malformed.
    """
    prefix = _read_exactly(stream, PREFIX_SIZE)
    if not prefix:
        raise EOFError("the stream ended")
    if len(prefix) < PREFIX_SIZE:
        raise ProtocolError("the stream ended inside a message prefix")
    rest = _read_exactly(stream, frame_size(prefix) - PREFIX_SIZE)
    if len(rest) < frame_size(prefix) - PREFIX_SIZE:
        raise ProtocolError("the stream ended inside a message")
    return unpack_message(prefix + rest)


def write_message(stream: BinaryIO, value: Any) -> None:
    """Encode ``value`` (see ``pack_message``) and write it to ``stream``, then flush."""
    stream.write(pack_message(value))
    stream.flush()
