"""The static check's refusals of dynamic imports, string execution, dunder access and
monkeypatching name the line, and ordinary kernel code is never refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.worker.static_check import check_file, check_source

REPO = Path(__file__).resolve().parents[2]

REFUSED = [
    ("x = __import__('os')", "use of '__import__'"),
    ("exec('import os')", "use of 'exec'"),
    ("eval('1 + 1')", "use of 'eval'"),
    ("code = compile('1', 'f', 'eval')", "use of 'compile'"),
    ("g = globals()", "use of 'globals'"),
    ("v = vars()", "use of 'vars'"),
    ("f = open('/etc/passwd')", "use of 'open'"),
    ("b = __builtins__", "use of '__builtins__'"),
    ("import numpy as np\nf = getattr(np, 'ctypes' + 'lib')", "computed attribute name"),
    ("import numpy as np\nf = getattr(np, 'ctypeslib')", "'getattr' of 'ctypeslib'"),
    ("get = getattr", "'getattr' used as a value"),
    ("import numpy as np\nsetattr(np, 'allclose', None)", "'setattr' on the imported module 'np'"),
    ("import numpy as np\nnp.allclose = None", "assigning to or deleting 'np.allclose'"),
    ("from pallas_sim import pl\npl.pallas_call = None",
     "assigning to or deleting 'pl.pallas_call'"),
    ("import numpy as np\ndel np.testing", "assigning to or deleting 'np.testing'"),
    ("import dataclasses\nm = dataclasses.sys", "access to '.sys'"),
    ("import typing\nt = typing.types", "access to '.types'"),
    ("s = ().__class__.__base__", "access to '.__base__'"),
    ("def f():\n    return f.__globals__", "access to '.__globals__'"),
    ("import numpy as np\nc = np.ctypeslib", "access to '.ctypeslib'"),
]


@pytest.mark.parametrize(("source", "what"), REFUSED)
def test_a_way_around_the_import_rule_is_refused_naming_its_line(source: str, what: str) -> None:
    result = check_source(source)
    assert not result.ok, source
    line = len(source.splitlines())
    assert f"line {line}: " in result.message() and what in result.message(), result.message()


ALLOWED = """\
import dataclasses
import functools
import math
from typing import NamedTuple

import numpy as np

from pallas_sim import jax, jnp, pl, pltpu


@dataclasses.dataclass(frozen=True)
class Block:
    rows: int
    cols: int

    def __post_init__(self):
        if self.rows <= 0:
            raise ValueError(f"rows={self.rows} must be positive")

    def __repr__(self):
        return f"Block({self.rows}, {self.cols})"


class State(NamedTuple):
    m: np.ndarray
    l: np.ndarray


def kernel(x_ref, o_ref, *, scale):
    o_ref[...] = x_ref[...] * scale
    o_ref.at[0]
    shape = getattr(x_ref, "shape")
    if hasattr(x_ref, "dtype"):
        pass
    return shape


def wrapper(x):
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    fn = functools.partial(kernel, scale=math.sqrt(2.0))
    return pl.pallas_call(fn, grid=(pl.cdiv(x.shape[0], 8),), in_specs=[spec], out_specs=spec,
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


if __name__ == "__main__":
    print(wrapper(jnp.ones((16, 128), np.float32)), pltpu.VMEM)
"""


def test_ordinary_kernel_code_is_not_refused() -> None:
    result = check_source(ALLOWED)
    assert result.ok, result.message()


@pytest.mark.parametrize("folder", ["solutions", "assignments", "examples/submissions"])
def test_the_handouts_solutions_and_samples_pass(folder: str) -> None:
    for path in sorted((REPO / folder).rglob("*.py")):
        if "dev_broken" in path.parts:  # broken on purpose (a forbidden import, bad syntax)
            continue
        result = check_file(path)
        assert result.ok, f"{path.relative_to(REPO)}: {result.message()}"
