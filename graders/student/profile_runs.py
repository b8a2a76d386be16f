"""What ``pallas-lab profile`` runs: the arguments given on its command line, or the
lecture's configurations of an assignment's file.

A run is a :class:`ProfileRun`: the function's name, a label naming it with its
configuration (used in the printed header and the pictures' titles) and its arguments.
The arguments of a lecture configuration may need the student's own code (a5's MaskInfo
is built with their ``causal_mask`` and ``build_mask_info``), so they are built when the
run starts, where what that code raises is reported like any other failure of the run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pallas_sim import jax, jnp

_DTYPES = {"bf16": jnp.bfloat16, "f32": jnp.float32, "f16": jnp.float16, "i32": jnp.int32,
           "i8": jnp.int8, "int8": jnp.int8, "int32": jnp.int32, "float32": jnp.float32,
           "bfloat16": jnp.bfloat16, "bool": jnp.bool_}
_SHAPE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[\s*([0-9,\s]*)\]\s*$")


@dataclass(frozen=True)
class ProfileRun:
    """One profiled configuration.

    Attributes:
      label: the function and its configuration in words, e.g. "matmul 1024³ blocks
        (§4.2)" or "matmul(bf16[4096,7168], bf16[7168,18432], block_shape=(1024, 1024,
        1024))".
      function: the name of the module's function to run.
      arguments: builds ``(args, kwargs)`` when the run starts; what it raises is the
        run's failure (it may call the student's code).
      building: what ``arguments`` does, in words, for its failure's message ("" when it
        only returns values given on the command line).
    """

    label: str
    function: str
    arguments: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
    building: str = ""


def parse_shape(text: str) -> jax.ShapeDtypeStruct:
    """``bf16[4096,7168]`` as a ``jax.ShapeDtypeStruct`` (dimensions in elements).

    Raises:
      ValueError: not DTYPE[d0,d1,...] with a known dtype.
    """
    m = _SHAPE.match(text)
    if not m or m.group(1) not in _DTYPES:
        raise ValueError(f"shape {text!r}: write DTYPE[d0,d1,...] with DTYPE one of "
                         f"{', '.join(sorted(_DTYPES))}, e.g. bf16[4096,7168]")
    dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
    return jax.ShapeDtypeStruct(dims, _DTYPES[m.group(1)])


def parse_kwargs(items: Sequence[str]) -> dict[str, Any]:
    """``name=python-literal`` pairs as a dict.

    Raises:
      ValueError: an item without ``=`` or with a value that is not a Python literal.
    """
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ValueError(f"--kw {item!r}: write NAME=VALUE, e.g. block_q=1024")
        try:
            out[name.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ValueError(f"--kw {item!r}: the value must be a Python literal") from None
    return out


def given_run(function: str, shapes: Sequence[str], kwargs: dict[str, Any]
              ) -> ProfileRun:
    """The run the command line describes: ``function`` on ``shapes`` (as written,
    ``bf16[4096,7168]``) with keyword arguments ``kwargs``, labelled as a call.

    Raises:
      ValueError: a shape that :func:`parse_shape` refuses.
    """
    args = tuple(parse_shape(s) for s in shapes)
    written = [re.sub(r"\s+", "", s) for s in shapes]
    written += [f"{name}={value!r}" for name, value in kwargs.items()]
    return ProfileRun(f"{function}({', '.join(written)})", function,
                      lambda: (args, dict(kwargs)))


def lecture_runs(module: ModuleType, stem: str) -> list[ProfileRun]:
    """The lecture's configurations for an assignment's file named ``<stem>.py`` or
    ``.ipynb`` (a3: §4.2, a4: §5.3-5.4, a5: §6.5); [] for any other stem. ``module`` is
    the file's module (a5's MaskInfo is built with its functions when the run starts)."""
    sds = jax.ShapeDtypeStruct
    if stem.startswith("a3"):
        x, y = sds((4096, 7168), jnp.bfloat16), sds((7168, 18432), jnp.bfloat16)
        return [ProfileRun(f"matmul {b}³ blocks (§4.2)", "matmul",
                           lambda b=b: ((x, y), {"block_shape": (b, b, b)}))
                for b in (512, 1024)]
    if stem.startswith("a4"):
        q, v = sds((128, 4096, 192), jnp.bfloat16), sds((128, 4096, 128), jnp.bfloat16)
        return [ProfileRun(f"flash_attention bq {bq}, bkv {bkv}{' + MLE' if mle else ''} "
                           "(§5.3-5.4)",
                           "flash_attention",
                           lambda bq=bq, bkv=bkv, mle=mle: (
                               (q, q, v), {"block_q": bq, "block_kv": bkv,
                                           "max_logit_const": mle}))
                for bq, bkv, mle in ((1024, 2048, None), (2048, 2048, None),
                                     (2048, 2048, 70.0))]
    if stem.startswith("a5"):
        q, v = sds((128, 8192, 192), jnp.bfloat16), sds((128, 8192, 128), jnp.bfloat16)

        def splash_arguments() -> tuple[tuple[Any, ...], dict[str, Any]]:
            info = module.build_mask_info(module.causal_mask(8192), 1024, 1024)
            return (q, q, v, info), {}

        return [ProfileRun("splash_attention causal L 8192, block 1024 (§6.5)",
                           "splash_attention",
                           splash_arguments,
                           "building the MaskInfo: build_mask_info(causal_mask(8192), "
                           "1024, 1024)")]
    return []
