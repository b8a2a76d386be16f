"""The static check: only the allowed imports, named by line; syntax errors shown in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.worker.static_check import ALLOWED_MODULES, check_file, check_source

ALLOWED_SOURCE = """\
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.linalg
from numpy import float32

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu, trace
from pallas_sim.pl import BlockSpec
"""


def test_the_handout_imports_and_every_allowed_module_pass() -> None:
    result = check_source(ALLOWED_SOURCE)
    assert result.ok, result.message()
    assert ALLOWED_MODULES == (
        "numpy", "math", "functools", "itertools", "dataclasses", "typing", "warnings",
        "pallas_sim",
    )


@pytest.mark.parametrize(
    ("source", "line", "module"),
    [
        ("import numpy as np\nimport os\n", 2, "os"),
        ("x = 1\n\nfrom subprocess import run\n", 3, "subprocess"),
        ("def f():\n    import importlib\n    return importlib\n", 2, "importlib"),
        ("import numpy, sys\n", 1, "sys"),
        ("import reference.a1_pallas_basics\n", 1, "reference.a1_pallas_basics"),
        ("from graders.checking import framework\n", 1, "graders.checking"),
        ("import jax\n", 1, "jax"),
        ("from pallas_sim._private import x\n", 1, "pallas_sim._private"),
    ],
)
def test_a_forbidden_import_is_rejected_naming_its_line_and_module(
    source: str, line: int, module: str
) -> None:
    result = check_source(source)
    assert not result.ok
    message = result.message()
    assert message.startswith(f"line {line}: import of '{module}' is not allowed (allowed: numpy, ")
    assert result.problems[0].line == line


def test_relative_imports_are_rejected() -> None:
    result = check_source("from . import helpers\nfrom ..x import y\n")
    assert [p.line for p in result.problems] == [1, 2]
    assert "relative import 'from .'" in result.problems[0].message
    assert "relative import 'from ..x'" in result.problems[1].message


def test_every_forbidden_import_is_listed_in_line_order() -> None:
    result = check_source("import os\nimport numpy\nimport sys\n")
    assert [p.line for p in result.problems] == [1, 3]


def test_a_syntax_error_gives_line_column_and_the_offending_line() -> None:
    result = check_source("import numpy as np\n\ndef f(x):\n    return x +* 2\n")
    assert not result.ok
    problem = result.problems[0]
    assert problem.line == 4
    assert problem.message.startswith("line 4, column ")
    assert "SyntaxError" in problem.message
    assert "return x +* 2" in problem.message
    assert problem.message.splitlines()[-1].strip() == "^"


def test_an_indentation_error_is_reported_as_such() -> None:
    result = check_source("def f():\nreturn 1\n")
    assert "IndentationError" in result.message()
    assert result.problems[0].line == 2


def test_bad_source_never_raises() -> None:
    assert not check_source("a = '\x00'\x00").ok
    assert not check_source("(" * 500).ok


def test_files_are_read_with_their_encoding_and_unreadable_ones_are_reported(
    tmp_path: Path,
) -> None:
    good = tmp_path / "a1_pallas_basics.py"
    good.write_text("# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n", encoding="latin-1")
    assert check_file(good).ok
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = '\xff\xfe'\n")
    assert "cannot decode bad.py" in check_file(bad).message()
    missing = check_file(tmp_path / "missing.py")
    assert not missing.ok and "cannot read missing.py" in missing.message()


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        # The trace-forging attack: reach the grader's active trace and rewrite a DMA count.
        ("from pallas_sim import tracing as _tr\nfor t in _tr._ACTIVE:\n    t.calls.pop()\n",
         "pallas_sim.tracing"),
        ("import pallas_sim\nrec = pallas_sim.tracing.record\n", "'.tracing'"),
        ("import pallas_sim.context\n", "pallas_sim.context"),
        ("from pallas_sim.dma import wait\n", "pallas_sim.dma"),
        ("import numpy as np\nx = np._NoValue\n", "'._NoValue'"),
        ("class A:\n    def f(self):\n        self = np\n        return self._core\n",
         "'._core'"),
    ],
)
def test_pallas_sim_internals_and_private_attributes_are_refused(source: str,
                                                                  refused: str) -> None:
    result = check_source(source)
    assert not result.ok and refused in result.message(), (
        "the simulator's internals (where the grader's trace lives) and private attributes "
        f"are out of a submission's reach; got: {result.message()!r}")


def test_a_class_may_keep_private_state_and_use_namedtuple_methods() -> None:
    source = (
        "from typing import NamedTuple\n"
        "class Point(NamedTuple):\n    x: int\n    y: int\n"
        "class Cache:\n    def __init__(self):\n        self._store = {}\n"
        "    def get(self, k):\n        return self._store.get(k)\n"
        "d = Point(1, 2)._asdict()\n"
    )
    result = check_source(source)
    assert result.ok, result.message()
