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

from graders.checks.framework import GRADING_SETTINGS  # noqa: E402 - also registers the profiles

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
    """Register the ``task`` marker (also declared in pyproject.toml)."""
    config.addinivalue_line("markers", "task(id): the assignment task (N.M) a test belongs to")


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
