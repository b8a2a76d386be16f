"""pallas_sim's internals are private by path: a new module under ``pallas_sim/_src`` is
unreachable by a submission without anyone editing a list.

The test copies pallas_sim into a temporary folder, adds a module nobody has heard of
under ``_src`` (and, as the control, one at the top of the package), and asks the
submission policy of this checkout, in a fresh interpreter that imports the copy,
what a submission may import.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, sys
import pallas_sim
from graders.worker.policy import rules
from graders.worker.policy.guards import _allowed_module_names
from graders.worker.static_check import check_source, is_allowed_module

SOURCES = {
    "import": "import pallas_sim._src.brand_new_internal\n",
    "from package": "from pallas_sim._src import brand_new_internal\n",
    "from module": "from pallas_sim._src.brand_new_internal import SECRET\n",
    "from top": "from pallas_sim import brand_new_internal\n",
    "attribute": "import pallas_sim\nx = pallas_sim._src.brand_new_internal.SECRET\n",
    "public control": "from pallas_sim.brand_new_public import hello\n",
}
print(json.dumps({
    "pallas_sim": pallas_sim.__file__,
    "public modules": list(rules.pallas_sim_public_modules()),
    "internal": rules.is_pallas_sim_internal("pallas_sim._src.brand_new_internal"),
    "allowed": is_allowed_module("pallas_sim._src.brand_new_internal"),
    "worker imports": [m for m in _allowed_module_names() if "brand_new" in m],
    "checks": {what: check_source(src).message() for what, src in SOURCES.items()},
}))
"""


def test_a_new_internal_module_is_refused_without_editing_any_list(tmp_path: Path) -> None:
    copy = tmp_path / "site" / "pallas_sim"
    shutil.copytree(ROOT / "pallas_sim", copy,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (copy / "_src" / "brand_new_internal.py").write_text(
        '"""An internal module added after the policy was written."""\nSECRET = 42\n',
        encoding="utf-8")
    (copy / "brand_new_public.py").write_text(
        '"""A public module added at the top of the package."""\n__all__ = ["hello"]\n\n\n'
        'def hello() -> str:\n    """Greet."""\n    return "hello"\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{copy.parent}{os.pathsep}{ROOT}",
           "PALLAS_LAB_POLICY": "on"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    assert Path(seen["pallas_sim"]).is_relative_to(copy), seen["pallas_sim"]
    assert seen["internal"] is True and seen["allowed"] is False
    assert seen["worker imports"] == ["pallas_sim.brand_new_public"]
    assert "pallas_sim.brand_new_public" in seen["public modules"]
    assert not any("_src" in m for m in seen["public modules"]), seen["public modules"]
    checks = seen["checks"]
    assert checks.pop("public control") == "", "a public module at the top must be importable"
    for what, message in checks.items():
        assert message.startswith("line "), (what, message)
        assert "not allowed" in message or "is private state" in message, (what, message)
    assert "pallas_sim._src.brand_new_internal" in checks["import"]
    assert "pallas_sim.brand_new_internal" in checks["from top"]
    assert "access to '._src'" in checks["attribute"]


def test_the_path_rule_gives_todays_public_modules() -> None:
    from graders.worker.policy import rules

    assert set(rules.pallas_sim_public_modules()) == {
        "pallas_sim", "pallas_sim.pl", "pallas_sim.pltpu", "pallas_sim.jnp", "pallas_sim.jax",
        "pallas_sim.lax", "pallas_sim.nn", "pallas_sim.random", "pallas_sim.tree",
        "pallas_sim.tree_util", "pallas_sim.ad_checkpoint", "pallas_sim.sharding"}
    for module in ("pallas_sim._src", "pallas_sim._src.tracing", "pallas_sim._src.config",
                   "pallas_sim.backends", "pallas_sim.backends.real_jax"):
        assert module not in rules.pallas_sim_public_modules()
    assert rules.is_pallas_sim_internal("pallas_sim._src.tracing")
    assert not rules.is_pallas_sim_internal("pallas_sim.pl")
    assert "pallas_sim.extend" not in rules.pallas_sim_public_modules()
    assert rules.is_pallas_sim_internal("pallas_sim.extend")


def test_the_trusted_surface_is_refused_at_run_time() -> None:
    """The worker's ``__import__`` and attribute guard refuse ``pallas_sim.extend`` however
    the name is spelled, with the grader's surface loaded (as it is in the worker)."""
    import types

    import pytest

    import pallas_sim.extend  # noqa: F401 - the worker has it loaded
    from graders.worker.policy.guards import (
        PolicyAttributeError,
        PolicyImportError,
        _guarded_import,
        load_submission,
    )
    from graders.worker.policy.transform import compile_submission

    guarded = _guarded_import({})
    for args in [("pallas_sim.extend",), ("pallas_sim", None, None, ("extend",)),
                 ("pallas_sim.extend", None, None, ("sim_options",))]:
        with pytest.raises(PolicyImportError, match="trusted surface"):
            guarded(*args)
    for args in [("pallas_sim._src",), ("pallas_sim", None, None, ("_src",))]:
        with pytest.raises(PolicyImportError, match="not allowed"):
            guarded(*args)
    source = "import pallas_sim\n\n\ndef reach(name):\n    return getattr(pallas_sim, name)\n"
    compiled = compile_submission(source, "/submission/reach.py")
    assert compiled.code is not None, compiled.problems
    module = types.ModuleType("reach")
    load_submission(compiled.code, module, "/submission/reach.py")
    for name in ("ext" + "end", "_s" + "rc"):
        with pytest.raises(PolicyAttributeError, match="not allowed"):
            module.reach(name)
