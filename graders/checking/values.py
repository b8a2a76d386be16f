"""The one value formatter of feedback: how arrays and drawn inputs are printed.

Hidden checks (``graders.checking``: a failing input, expected and got), public
checks and the self-check (``graders.student``) all print values through
:func:`describe_value` and :func:`describe_array`, so a student sees the same
array printed the same way wherever it appears (docs/style.md: short, deterministic).
Imports only numpy and the standard library (it ships in the student bundle).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_SHORT_DTYPES = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
    "uint64": "u64", "uint32": "u32", "uint16": "u16", "uint8": "u8", "bool": "bool",
}
#: Arrays with at most this many elements are printed in full, larger ones by their range.
MAX_SHOWN_ELEMENTS = 16
#: A described value is cut to this many characters (ending in "...").
MAX_DESCRIPTION_CHARS = 800
_PLAIN_REPRS = (dict.__repr__, list.__repr__, tuple.__repr__, object.__repr__)


def describe_array(array: np.ndarray) -> str:
    """Compact text for an array: ``f32[2,3]`` plus its values when it has at most 16
    elements, else its value range over the finite values (e.g. ``f32[64,128] in
    [-2.1, 3.4]``). bfloat16 values are shown as float32; floats with at most 4
    significant digits."""
    name = _SHORT_DTYPES.get(array.dtype.name, array.dtype.name)
    head = f"{name}[{','.join(str(d) for d in array.shape)}]"
    shown = array
    if array.dtype.name == "bfloat16" or array.dtype.kind == "V":
        shown = array.astype(np.float32)
    if array.size <= MAX_SHOWN_ELEMENTS:
        body = np.array2string(
            shown, separator=", ", threshold=MAX_SHOWN_ELEMENTS, max_line_width=10**6,
            formatter={"float_kind": format_float, "bool": lambda b: str(bool(b))},
        )
        return f"{head} {body}"
    if shown.dtype.kind in "fiu" and shown.size:
        finite = shown[np.isfinite(shown)] if shown.dtype.kind == "f" else shown
        if finite.size:
            return f"{head} in [{finite.min():.4g}, {finite.max():.4g}]"
    return head


def format_float(value: float) -> str:
    """``1.0``, ``-0.3679``, ``1.5e+30``, ``nan``: at most 4 significant digits."""
    magnitude = abs(float(value))
    if magnitude != 0 and np.isfinite(magnitude) and not 1e-4 <= magnitude < 1e5:
        return np.format_float_scientific(value, precision=3, unique=True, trim="-")
    return np.format_float_positional(value, precision=4, unique=True, fractional=False,
                                      trim="0")


def describe_value(value: Any) -> str:
    """Compact, deterministic text for a value (a failing input, an expected or got value).

    A dict with str keys prints as ``k = v, ...`` (keyword style); tuples and
    lists element-wise; arrays through :func:`describe_array`; a drawn case whose
    class defines its own ``__repr__`` (a strategy's case record, not a NamedTuple)
    through it. Capped at ``MAX_DESCRIPTION_CHARS`` characters.
    """
    text = _describe(value, top=True)
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 3] + "..."
    return text


def _own_repr(value: Any) -> bool:
    return (isinstance(value, dict | list | tuple) and not hasattr(value, "_fields")
            and type(value).__repr__ not in _PLAIN_REPRS)


def _describe(value: Any, top: bool = False) -> str:
    if isinstance(value, np.ndarray):
        return describe_array(value)
    if isinstance(value, np.generic):
        return repr(value.item()) if value.dtype.kind != "V" else str(value)
    if _own_repr(value):
        return repr(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        parts = [f"{k} = {_describe(v)}" for k, v in value.items()]
        return ", ".join(parts) if top else "{" + ", ".join(parts) + "}"
    if isinstance(value, tuple | list):
        inner = ", ".join(_describe(v) for v in value)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)
