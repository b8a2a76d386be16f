"""Shared by the a4 hidden checks: constants."""

from __future__ import annotations

import numpy as np

A = "a4"
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
SCALES = [(-4.0, 4.0), (-30.0, 30.0), (40.0, 90.0)]


def _without_nan_guess(what: str) -> str:
    """``what`` without compare.assert_close's general remark on what NaN usually means, for
    a failure whose verified diagnosis says what it means here."""
    head, sep, _ = what.partition(" — NaN in the output usually means")
    return f"{head} (some of them NaN)" if sep else what
