"""The compile-time half of the submission policy: its refusals of dynamic imports, string
execution, dunder and introspection access, guard names and monkeypatching name the line,
and ordinary kernel code is never refused. (What is decided at run time — names computed
while the code runs, public names of numpy a submission may not use, writes to objects that
are not its own — is in tests/redteam/test_policy.py.)"""

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
    ("b = __builtins__", "use of '__builtins__'"),
    ("import numpy as np\nnp.allclose = None", "assigning to or deleting 'np.allclose'"),
    ("from pallas_sim import pl\npl.pallas_call = None",
     "assigning to or deleting 'pl.pallas_call'"),
    ("import numpy as np\ndel np.testing", "assigning to or deleting 'np.testing'"),
    ("import numpy as np\nnp.pi += 1", "assigning to or deleting 'np.pi'"),
    ("s = ().__class__.__base__", "access to '.__base__'"),
    ("def f():\n    return f.__globals__", "access to '.__globals__'"),
    ("def g():\n    yield 1\nfr = g().gi_frame", "access to '.gi_frame'"),
    ("try:\n    1 / 0\nexcept Exception as e:\n    t = e.__traceback__",
     "access to '.__traceback__'"),
    ("_getattr_ = None", "the name '_getattr_'"),
    ("def f(_write_):\n    pass", "line 1: the name '_write_'"),
    ("from typing import get_type_hints", "typing.get_type_hints"),
    ("from dataclasses import sys", "dataclasses.sys"),
    ("import numpy.lib.stride_tricks", "import of 'numpy.lib.stride_tricks'"),
    ("import pallas_sim\nrec = pallas_sim.tracing", "access to '.tracing'"),
    ("match 1:\n    case int(real=r):\n        pass", "line 1: the match statement"),
    ("class A(metaclass=type):\n    pass", "line 1: a metaclass"),
]

@pytest.mark.parametrize(("source", "what"), REFUSED)
def test_a_way_around_the_import_rule_is_refused_naming_its_line(source: str, what: str) -> None:
    result = check_source(source)
    assert not result.ok, source
    line = len(source.splitlines())  # the last line, unless ``what`` names another
    where = "" if what.startswith("line ") else f"line {line}: "
    assert where in result.message() and what in result.message(), result.message()


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
    o_ref[...] += x_ref[...]
    o_ref.at[0]
    shape = getattr(x_ref, "shape")
    get = getattr
    if hasattr(x_ref, "dtype") and get(x_ref, "ndim"):
        pass
    return shape


def _helper(_x, total: int = 0):
    count = 0

    def bump():
        nonlocal count
        count += 1
    bump()
    return _x, total + count


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


TRUSTED_SURFACE = [
    "import pallas_sim.extend",
    "from pallas_sim import extend",
    "from pallas_sim.extend import sim_options",
    "import pallas_sim.extend as pe",
    "import pallas_sim\nopts = pallas_sim.extend.sim_options",
]


@pytest.mark.parametrize("source", TRUSTED_SURFACE)
def test_the_trusted_surface_is_refused_naming_what_it_is(source: str) -> None:
    """``pallas_sim.extend`` sits at the top of the package, where the path rule would make
    a module public; it is the grader's, and a submission is told so."""
    result = check_source(source)
    assert not result.ok, source
    message = result.message()
    assert f"line {len(source.splitlines())}: " in message, message
    assert "trusted surface" in message and "not a submission's" in message, message


@pytest.mark.parametrize("source", ["import pallas_sim._src.config",
                                    "from pallas_sim import _src",
                                    "from pallas_sim._src.config import _override"])
def test_the_internals_are_refused(source: str) -> None:
    result = check_source(source)
    assert not result.ok and "not allowed" in result.message(), result.message()
