"""The run-time half of the submission policy (graders/worker/policy): names computed while
the code runs meet the same allowlist as names in the source, refusals name the student's
line, and the audit hook refuses what slips past (docs/security.md, "The submission policy").
"""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pallas_sim
from graders.worker.client import Worker
from graders.worker.policy import rules
from graders.worker.policy.guards import PolicyAttributeError, load_submission
from graders.worker.policy.transform import compile_submission
from pallas_sim import pl
from pallas_sim._src.refs import Ref
from pallas_sim._src.values import KernelValue

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import numpy as np
import dataclasses
import functools
import typing
from pallas_sim import jax, jnp, pl, pltpu


class Mine:
    def __init__(self):
        self._secret = 1


def mine():
    return 1


def gen():
    yield 1


def reach(obj, name):
    return getattr(obj, name)


def has(obj, name):
    return hasattr(obj, name)


def store(obj, name, value):
    setattr(obj, name, value)
"""


@pytest.fixture(scope="module")
def probe() -> types.ModuleType:
    compiled = compile_submission(PROBE, "/submission/probe.py")
    assert compiled.code is not None, compiled.problems
    module = types.ModuleType("probe")
    load_submission(compiled.code, module, "/submission/probe.py")
    return module


def _targets(probe: types.ModuleType) -> dict[str, object]:
    """Objects a submission meets or could get hold of, trusted ones included."""
    try:
        raise ValueError("x")
    except ValueError as exc:
        traceback = exc.__traceback__
    return {
        "generator": probe.gen(), "own function": probe.mine, "own instance": probe.Mine(),
        "own class": probe.Mine, "numpy": np, "pl": pl, "jnp": pallas_sim.jnp,
        "pallas_sim": pallas_sim, "typing": __import__("typing"),
        "dataclasses": __import__("dataclasses"), "functools": __import__("functools"),
        "a ref": Ref(np.zeros((8, 128), np.float32), "x_ref"), "an array": np.zeros(3),
        "a kernel value": KernelValue(np.zeros((8, 128), np.float32)),
        "a trusted function": pl.pallas_call, "a trusted class": pl.BlockSpec,
        "a spec": pl.BlockSpec((8, 128), lambda i: (i, 0)), "an exception": ValueError("e"),
        "a traceback": traceback, "a frame": sys._getframe(), "object": object,
        "the lax namespace": pallas_sim.jax.lax, "a partial": __import__("functools").partial(
            print, 1), "a bound method": np.zeros(3).sum, "a dtype": np.dtype("f4"),
    }


#: Where a submission must never arrive, however it spells the name.
FORBIDDEN_KINDS = (types.FrameType, types.TracebackType, types.CodeType, types.CellType)


def _is_forbidden(value: object, obj: object, name: str, probe: types.ModuleType) -> str | None:
    if isinstance(value, FORBIDDEN_KINDS):
        return f"a {type(value).__name__}"
    if isinstance(value, types.ModuleType) and value.__name__ not in _allowed_modules():
        return f"module {value.__name__}"
    if isinstance(value, dict) and any(value is vars(m) for m in list(sys.modules.values())
                                       if m is not None):
        return "a module's namespace"
    if isinstance(value, dict) and value is vars(probe):
        return "the submission's own globals"
    if name.startswith("_") and name not in rules.HARMLESS_DUNDER_ATTRIBUTES and not (
            isinstance(obj, probe.Mine) or obj is probe.Mine):
        return f"the private name {name!r} of an object that is not the submission's"
    return None


def _allowed_modules() -> set[str]:
    from graders.worker.policy.guards import _allowed_module_names
    return set(_allowed_module_names()) | {"numpy"}


DANGEROUS = sorted(rules.INTROSPECTION_ATTRIBUTES | {
    "__globals__", "__code__", "__closure__", "__dict__", "__subclasses__", "__bases__",
    "__mro__", "__builtins__", "__traceback__", "__self__", "__func__", "__wrapped__",
    "__init__", "__getattribute__", "__reduce__", "mro", "sys", "os", "operator", "lib",
    "ctypes", "ctypeslib", "tracing", "context", "_ACTIVE", "_buf", "_reads", "_name",
    "_secret", "modules", "get_type_hints", "ForwardRef", "format", "func", "keywords",
    "reads", "name", "at", "shape", "tofile", "setflags", "base", "data", "flags",
    "bit_generator", "_sems", "_STACK", "config", "_override", "_lock",
})


TARGET_NAMES = ["generator", "own function", "own instance", "own class", "numpy", "pl", "jnp",
                "pallas_sim", "typing", "dataclasses", "functools", "a ref", "a kernel value",
                "an array", "a trusted function", "a trusted class", "a spec", "an exception",
                "a traceback", "a frame", "object", "the lax namespace", "a partial",
                "a bound method", "a dtype"]


def _check_reach(probe: types.ModuleType, target: str, name: str) -> None:
    obj = _targets(probe)[target]
    try:
        value = probe.reach(obj, name)
    except (AttributeError, TypeError):
        assert not probe.has(obj, name)
        return  # refused (PolicyAttributeError is an AttributeError) or not there
    reason = _is_forbidden(value, obj, name, probe)
    assert reason is None, f"getattr({target}, {name!r}) reached {reason}"
    assert probe.has(obj, name)


def test_the_dangerous_names_never_reach_frames_or_private_state(probe) -> None:
    for target in TARGET_NAMES:
        for name in DANGEROUS:
            _check_reach(probe, target, name)


@settings(max_examples=600, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(target=st.sampled_from(TARGET_NAMES),
       name=st.one_of(st.text(max_size=12), st.from_regex(r"\A_{1,2}[a-z_]{1,12}_{0,2}\Z"),
                      st.builds(lambda a, b: a + b, st.sampled_from(DANGEROUS),
                                st.sampled_from(["", "_", "__", "s"]))))
def test_names_computed_at_run_time_never_reach_frames_or_private_state(
        probe: types.ModuleType, target: str, name: str) -> None:
    _check_reach(probe, target, name)


def test_names_that_reach_the_interpreter_are_refused_on_every_object(probe) -> None:
    for target, obj in _targets(probe).items():
        for name in ("gi_frame", "tb_frame", "f_back", "f_globals", "__globals__", "__code__",
                     "__subclasses__", "__dict__", "__builtins__"):
            with pytest.raises(AttributeError):
                probe.reach(obj, name)
            assert not probe.has(obj, name), (target, name)


def test_a_kernel_value_never_hands_over_its_concrete_array(probe) -> None:
    # ``_a`` would let a kernel branch in Python on a value JAX does not know yet.
    value = _targets(probe)["a kernel value"]
    for name in ("_a", "__array__", "__array_interface__", "__dict__", "item", "tolist"):
        try:
            got = probe.reach(value, name)
        except (AttributeError, TypeError):
            continue
        assert callable(got), (name, got)
        with pytest.raises(pallas_sim.TracerConversionError):
            got()


def test_the_submission_writes_only_its_own_objects(probe) -> None:
    mine = probe.Mine()
    probe.store(mine, "_secret", 2)
    assert mine._secret == 2
    for target, obj in _targets(probe).items():
        if target in ("own instance", "own class", "own function"):
            continue
        with pytest.raises((PermissionError, AttributeError, TypeError)):
            probe.store(obj, "name", "forged")


RUN_TIME = [
    ("g = globals()", "globals() is not available while grading"),
    ("v = vars()", "vars() is not available while grading"),
    ("f = open('/etc/passwd')", "open() is not available while grading"),
    ("s = input()", "input() is not available while grading"),
    ("f = getattr(np, 'ctypes' + 'lib')", "reading '.ctypeslib' of module numpy is not allowed"),
    ("get = getattr\n    f = get(np, 'ctypeslib')",
     "reading '.ctypeslib' of module numpy is not allowed"),
    ("setattr(np, 'allclose', None)", "setting or deleting attributes of module numpy"),
    ("m = dataclasses.sys", "reading '.sys' of module dataclasses is not allowed"),
    ("t = typing.types", "reading '.types' of module typing is not allowed"),
    ("c = np.ctypeslib", "reading '.ctypeslib' of module numpy is not allowed"),
    ("np.zeros(3).tofile('/tmp/x')", "reading '.tofile' of a ndarray object is not allowed"),
    ("x = np.zeros(3); x.flags.writeable = True", "reading '.flags' of a ndarray"),
    ("k = type('K', (), {})", "type() with three arguments is not allowed"),
    ("pallas_sim.jnp.rsqrt(1.0)", "`jax.numpy.rsqrt` does not exist in JAX"),
    ("s = '{0.gi_frame}'.format(1)", "reading '.gi_frame' of a int object is not allowed"),
]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Worker:
    folder = tmp_path_factory.mktemp("runtime")
    functions = [f"def case{i}():\n    {code}\n" for i, (code, _) in enumerate(RUN_TIME)]
    source = ("import numpy as np\nimport dataclasses\nimport typing\nimport pallas_sim\n"
              "from pallas_sim import pl\n\n\n" + "\n\n".join(functions))
    path = folder / "a1_pallas_basics.py"
    path.write_text(source, encoding="utf-8")
    with Worker(path, timeout=10.0, policy=True) as w:
        assert w.load_result is not None and w.load_result.ok, w.load_result
        yield w


@pytest.mark.parametrize(("index", "says"), [(i, says) for i, (_, says) in enumerate(RUN_TIME)])
def test_a_run_time_refusal_fails_only_its_call_and_names_the_line(
        worker: Worker, index: int, says: str) -> None:
    result = worker.call(f"case{index}")
    assert not result.ok and result.error is not None
    error = result.error
    assert says in f"{error.type}: {error.message}", error
    assert f"in case{index}" in error.traceback, "the student's own frame is shown"
    assert worker.call("case0").error.kind == "exception", "the worker lives on"


HOOK_SOURCE = """
def frame():
    return sys._getframe()

def generator_frame():
    def g():
        yield 1
    return g().gi_frame

def traceback_frame():
    try:
        1 / 0
    except Exception as e:
        return e.__traceback__.tb_frame

def import_module():
    import smtplib
"""

HOOK_PROBE = """
import sys
import linecache
from pathlib import Path
sys.path.insert(0, {repo!r})
import numpy as np
from graders.worker.policy import audit

SUBMISSION = "/submission/hook_probe.py"
namespace = {{"sys": sys}}
exec(compile({source!r}, SUBMISSION, "exec"), namespace)  # defined before arming the hook
arm = audit.install(SUBMISSION, frozenset(), lambda cls: False)
arm()

def run(fn):
    try:
        fn()
    except PermissionError as exc:
        return type(exc).__name__ + ": " + str(exc)
    return "allowed"

results = {{name: run(namespace[name]) for name in
            ("frame", "generator_frame", "traceback_frame", "import_module")}}
results["exec through numpy"] = run(lambda: np.fromfunction(lambda: exec("x = 1"), ()))
results["write from trusted code"] = run(lambda: Path("/tmp/pallas-lab-audit").write_text("x"))
results["read through pathlib"] = run(lambda: Path({readme!r}).read_text())
results["read through linecache"] = "allowed" if linecache.getline({readme!r}, 1) else "empty"
results["process"] = run(lambda: __import__("subprocess").run(["true"]))
print(results)
"""


def test_the_audit_hook_refuses_what_reaches_the_interpreter() -> None:
    code = HOOK_PROBE.format(repo=str(REPO), readme=str(REPO / "README.md"),
                             source=HOOK_SOURCE)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    results = eval(done.stdout)  # noqa: S307 - our own probe's dict literal
    for case in ("frame", "generator_frame", "traceback_frame", "import_module"):
        assert results[case].startswith("PolicyEventError"), (case, results[case])
        assert "the submission reached" in results[case], (case, results[case])
    for case in ("exec through numpy", "write from trusted code", "read through pathlib",
                 "process"):
        assert results[case].startswith("PolicyEventError"), (case, results[case])
    assert results["read through linecache"] == "allowed"


def test_the_policy_refusal_error_is_an_attribute_error() -> None:
    assert issubclass(PolicyAttributeError, AttributeError), (
        "getattr(obj, name, default) and hasattr keep their meaning for a refused name")


def test_the_targets_cover_every_name_the_hypothesis_test_draws(probe) -> None:
    assert sorted(_targets(probe)) == sorted(TARGET_NAMES)


def test_honest_idioms_run_under_the_policy(tmp_path: Path) -> None:
    source = (Path(__file__).resolve().parent / "honest_idioms.py").read_text(encoding="utf-8")
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text(source, encoding="utf-8")
    with Worker(path, timeout=30.0, policy=True) as w:
        assert w.load_result is not None and w.load_result.ok, w.load_result
        names = sorted(n for n in w.load_result.names if n.startswith("t_"))
        assert len(names) >= 15
        failures = {}
        for name in names:
            result = w.call(name)
            if not result.ok:
                failures[name] = f"{result.error.type}: {result.error.message}"
    assert not failures, f"honest code refused by the policy: {failures}"
