"""The worker sees only the submission, numpy and pallas_sim; never the grader or the reference."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graders.worker.client import Worker

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import importlib
import os
import sys


def import_by_name(name):
    __import__(name)
    return "imported"


def import_by_importlib(name):
    importlib.import_module(name)
    return "imported"


def modules():
    return sorted(sys.modules)


def path():
    return list(sys.path)


def listing():
    return sorted(os.listdir(os.getcwd())), os.getcwd()


def environment():
    return dict(os.environ)


def stdin():
    return sys.stdin.read()


def add(x, y):
    return x + y


def same(x, y):
    return x, y, x


def mutate(a):
    a += 1
    return None
"""


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    folder = tmp_path_factory.mktemp("alice")
    (folder / "a1_pallas_basics.py").write_text(PROBE, encoding="utf-8")
    # The process layer on its own: the probes import by name, which the submission
    # policy refuses before sys.path is ever consulted.
    with Worker(folder / "a1_pallas_basics.py", timeout=5.0, policy=False) as w:
        assert w.load_result is not None and w.load_result.ok, w.load_result
        yield w


@pytest.mark.parametrize("name", ["reference", "reference.a1_pallas_basics", "graders",
                                  "graders.checking.framework", "solutions", "hypothesis",
                                  "pytest", "rich"])
@pytest.mark.parametrize("how", ["import_by_name", "import_by_importlib"])
def test_the_grader_and_the_reference_cannot_be_imported(worker: Worker, how: str,
                                                         name: str) -> None:
    result = worker.call(how, (name,))
    assert not result.ok
    assert result.error is not None
    assert result.error.type == "ModuleNotFoundError", result.error


def test_numpy_and_the_simulator_can_be_imported(worker: Worker) -> None:
    assert worker.call("import_by_name", ("numpy",)).value == "imported"
    assert worker.call("import_by_name", ("ml_dtypes",)).value == "imported"
    assert worker.call("import_by_importlib", ("pallas_sim.pl",)).value == "imported"


def test_no_project_module_is_ever_loaded_in_the_worker(worker: Worker) -> None:
    loaded = worker.call("modules").value
    for prefix in ("reference", "graders", "solutions", "hypothesis", "pytest", "rich"):
        assert not [m for m in loaded if m == prefix or m.startswith(prefix + ".")], prefix


def test_sys_path_is_the_workdir_the_libdir_and_the_stdlib(worker: Worker) -> None:
    entries = worker.call("path").value
    assert entries[:2] == [str(worker.workdir), str(worker.libdir)]
    for entry in entries[2:]:
        assert "site-packages" not in entry and not entry.startswith(str(REPO))


def test_the_working_directory_holds_only_the_submission_copy(worker: Worker) -> None:
    names, cwd = worker.call("listing").value
    assert names == ["a1_pallas_basics.py"]
    assert cwd == str(worker.workdir)
    assert not Path(cwd).is_relative_to(REPO)


def test_the_environment_is_scrubbed(worker: Worker, monkeypatch: pytest.MonkeyPatch) -> None:
    env = worker.call("environment").value
    allowed = {"PATH", "LANG", "HOME", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
               "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}
    assert set(env) - {"LC_CTYPE"} <= allowed
    assert env["PATH"] == "/usr/bin:/bin"
    assert env["HOME"] == str(worker.workdir)
    assert env["OPENBLAS_NUM_THREADS"] == "1"
    assert "PYTHONPATH" not in env and "VIRTUAL_ENV" not in env


def test_the_student_cannot_read_the_protocol_from_stdin(worker: Worker) -> None:
    assert worker.call("stdin").value == ""
    assert worker.call("add", (1, 2)).value == 3


def test_identity_of_returned_arrays_and_args_after_the_call(worker: Worker) -> None:
    x, y = np.zeros(3), np.ones(3)
    result = worker.call("same", (x, y))
    assert result.returned_arg == (0, 1, 0)
    result = worker.call("add", (x, y))
    assert result.returned_arg == (None,)
    result = worker.call("mutate", (np.zeros(2),), return_args=True)
    assert result.args_after is not None
    np.testing.assert_array_equal(result.args_after[0], [1.0, 1.0])


def test_temp_dirs_and_the_process_are_gone_after_close(tmp_path: Path) -> None:
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text("def f():\n    return 1\n", encoding="utf-8")
    with Worker(path, timeout=5.0) as w:
        assert w.call("f").value == 1
        pid, base = w.pid, w.workdir.parent  # its own temp folder (the libdir may be a zygote's)
    assert pid is not None
    assert not base.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
