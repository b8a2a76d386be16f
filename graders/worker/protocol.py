"""Values <-> bytes for the grader/worker pipe: one JSON header plus one ``.npz`` blob.

This module is shared by both sides of the trusted/untrusted split (design.md,
"Grading architecture"): the trusted grader imports it as
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

import hashlib
import hmac
import io
import json
import math
import struct
import zipfile
from typing import Any, BinaryIO

import ml_dtypes
import numpy as np

MAGIC = b"PLW1"
PREFIX = struct.Struct(">4sQQ")
PREFIX_SIZE = PREFIX.size

#: Largest message either side accepts, in bytes (header + blob).
MAX_MESSAGE_BYTES = 512 * 1024 * 1024
#: Largest total of the uncompressed array members of one blob.
MAX_ARRAY_BYTES = 512 * 1024 * 1024
#: Deepest nesting of lists/tuples/dicts a value tree may have.
MAX_DEPTH = 64

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
_ML_DTYPES: dict[str, np.dtype] = {}
for _name in (
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
):
    if hasattr(ml_dtypes, _name):
        _ML_DTYPES[_name] = np.dtype(getattr(ml_dtypes, _name))
_BITS_DTYPE = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16)}

# Plain numpy dtype kinds that np.savez writes without pickling.
_PLAIN_KINDS = frozenset("biufcUS")


class ProtocolError(ValueError):
    """A message or value tree that breaks the protocol (bad framing, bad tag, bad array)."""


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
    for name, ml in _ML_DTYPES.items():
        if dtype == ml:
            return name
    if dtype.kind not in _PLAIN_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"dtype {dtype} is not supported")
    return dtype.str  # e.g. "<f4", "|b1", "<U5": endianness and size included


def _to_storable(array: np.ndarray, tag: str) -> np.ndarray:
    if tag in _ML_DTYPES:
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
    if tag in _ML_DTYPES:
        dtype = _ML_DTYPES[tag]
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


def decode_tree(node: Any, arrays: dict[str, np.ndarray], _depth: int = 0) -> Any:
    """Rebuild a value tree from ``encode_tree``'s node and arrays.

    Lists come back as lists and tuples as tuples; arrays keep their dtype
    (``bfloat16`` included); scalars come back as numpy scalars. Raises
    ``ProtocolError`` on any malformed node, unknown tag, missing array or
    mismatched dtype. Creates only plain Python values and numpy arrays.
    """
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
            items = [decode_tree(item, arrays, _depth + 1) for item in payload]
            return items if tag == "list" else tuple(items)
        if tag == "dict":
            if not isinstance(payload, dict):
                raise ProtocolError("malformed dict node")
            return {key: decode_tree(item, arrays, _depth + 1) for key, item in payload.items()}
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


def _unpack_arrays(blob: bytes) -> dict[str, np.ndarray]:
    if not blob:
        return {}
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ProtocolError(f"the array blob is not a valid .npz file: {exc}") from None
    if total > MAX_ARRAY_BYTES:
        raise ProtocolError(f"the array blob unpacks to {total} bytes (limit {MAX_ARRAY_BYTES})")
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ProtocolError(f"the array blob could not be read: {exc}") from None


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


def frame_size(prefix: bytes) -> int:
    """Total size in bytes of the message whose first ``PREFIX_SIZE`` bytes are ``prefix``.

    Raises ``ProtocolError`` for a wrong magic number or an oversized message.
    """
    if len(prefix) < PREFIX_SIZE:
        raise ProtocolError(f"message prefix has {len(prefix)} bytes, expected {PREFIX_SIZE}")
    magic, header_len, blob_len = PREFIX.unpack(prefix[:PREFIX_SIZE])
    if magic != MAGIC:
        raise ProtocolError(f"bad magic number {magic!r} (expected {MAGIC!r})")
    if header_len + blob_len > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {header_len + blob_len} bytes is too large")
    return PREFIX_SIZE + header_len + blob_len


def unpack_message(data: bytes) -> Any:
    """Decode one complete framed message produced by ``pack_message``.

    Raises ``ProtocolError`` for bad framing, trailing bytes, invalid JSON,
    an unknown header version or a malformed value tree.
    """
    size = frame_size(data)
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
    try:
        return decode_tree(header["tree"], _unpack_arrays(blob))
    except RecursionError:
        raise ProtocolError("value tree nested too deeply") from None


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
