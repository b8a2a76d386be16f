"""``pallas-lab check --backend jax`` without JAX installed: one clear line, exit 2."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from graders.student import cli

ROOT = Path(__file__).resolve().parents[2]


def test_without_jax_the_jax_backend_says_so_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jax" else real(name, *a))
    monkeypatch.chdir(ROOT / "assignments")
    status = cli.main(["check", "--backend", "jax", "a1_pallas_basics.py"])
    out, err = capsys.readouterr()
    assert status == cli.EXIT_USAGE
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("pallas-lab check: --backend jax needs JAX"), err
    assert "pip install '.[jax]'" in err
