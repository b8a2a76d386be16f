"""pytest configuration shared by the whole repository.

* hypothesis profiles: ``grading`` (deterministic, the one checks run under),
  ``exploratory`` (random, fewer examples) and ``ci`` (``grading`` with normal
  verbosity, the default here so the suite gives the same result on every run);
  choose another with hypothesis' own ``--hypothesis-profile``;
* the ``task("N.M")`` marker naming the assignment task a test belongs to;
* ``--submission PATH``: the submission file that ``pytest graders --submission
  PATH`` grades (the pytest integration of docs/grading-design.md, "Integrations");
* the suite runs on every core (pytest-xdist, ``-n auto --dist loadfile`` in
  pyproject.toml; ``-n 0`` runs it in this process): a test module stays on one xdist
  worker, so an expensive module fixture (a class graded through the CLI) is built once;
* the slices' markers, applied at collection (``pytest_collection_modifyitems``): ``e2e``
  on every test of a module that runs a command line (``graders.cli.main``,
  ``graders.student.cli``, ``graders.integrations.gradescope.autograder``; in a subprocess or
  by its ``main``) or
  grades whole files through a worker (``grade_file``, ``graded_sample``, the
  self-check's ``check_file``), decided from the module's source by ``e2e_module``
  (tests/helpers/slices.py); ``fidelity`` on everything under ``tests/fidelity``; and one marker per
  discovered lab (``a1`` .. ``a5``, from ``graders.course.catalog.ASSIGNMENTS``) on a test
  whose node id names the lab's id or stem (``lab_markers``);
* one worker zygote for the session (``graders.worker.zygote``): the workers this
  process starts fork from it, as a batch's do, instead of starting an interpreter each.
  The exec'd workers of single-file grading are still tested where a test asks for them
  (``zygote.use(None)``) and in every CLI run, which is a process of its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import Verbosity, settings

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graders.checking.framework import GRADING_SETTINGS  # noqa: E402 - also registers the profiles
from tests.helpers.slices import FIDELITY_DIR, assignments, e2e_module, lab_markers  # noqa: E402

# The fake one-task lab and its submissions (fixtures the stage folders share).
pytest_plugins = ["tests.helpers.fake_lab"]

# The suite's own profile: the grading profile, but failures print their falsifying example.
settings.register_profile("ci", settings(GRADING_SETTINGS, verbosity=Verbosity.normal))
settings.load_profile("ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--submission PATH``."""
    parser.addoption(
        "--submission",
        action="store",
        default=None,
        metavar="PATH",
        help="a submission file to grade with `pytest graders --submission PATH`",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``task`` marker (also declared in pyproject.toml) and one marker per lab."""
    config.addinivalue_line("markers", "task(id): the assignment task (N.M) a test belongs to")
    for assignment in assignments():
        config.addinivalue_line(
            "markers", f"{assignment.id}: tests that name {assignment.id} ({assignment.stem})")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Apply the ``e2e``, ``fidelity`` and per-lab markers (the module docstring)."""
    for item in items:
        path = Path(str(item.path))
        if FIDELITY_DIR in path.parents:
            item.add_marker(pytest.mark.fidelity)
        if path.name.startswith("test_") and e2e_module(path):
            item.add_marker(pytest.mark.e2e)
        for lab in lab_markers(item.nodeid):
            item.add_marker(getattr(pytest.mark, lab))


@pytest.fixture
def submission(request: pytest.FixtureRequest) -> Path | None:
    """The ``--submission`` path, or None when it was not given."""
    value = request.config.getoption("--submission")
    return Path(value) if value else None


@pytest.fixture(scope="session", autouse=True)
def worker_zygote():  # noqa: ANN201 - a generator fixture
    """The session's worker zygote, or None where this machine cannot run one."""
    from graders.worker import zygote

    with zygote.serving() as running:
        yield running
