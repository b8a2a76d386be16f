"""``pallas-lab profile``: the table, the text rendering, the pictures,
and bad input (unknown chip, shapes, an OOM configuration)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import pallas_sim
from graders.cli import main as cli
from graders.student import kernel_profile, profile_pictures, profile_runs, profile_text
from pallas_sim import jax, jnp

ROOT = Path(__file__).resolve().parents[2]
A3 = ROOT / "solutions" / "a3_matmul.py"
A5 = ROOT / "solutions" / "a5_splash_attention.py"


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"profile_test_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shapes_and_keywords_parse():
    s = profile_runs.parse_shape("bf16[4096, 7168]")
    assert s.shape == (4096, 7168) and s.dtype == jnp.bfloat16
    assert profile_runs.parse_shape("f32[]").shape == ()
    with pytest.raises(ValueError, match="DTYPE"):
        profile_runs.parse_shape("q16[3]")
    assert profile_runs.parse_kwargs(["block_shape=(512, 512, 256)", "causal=True"]) == {
        "block_shape": (512, 512, 256), "causal": True}
    with pytest.raises(ValueError, match="NAME=VALUE"):
        profile_runs.parse_kwargs(["oops"])


def test_profile_prints_the_estimates_table(capsys):
    argv = ["profile", str(A3), "--function", "matmul", "--shapes", "bf16[2048,1024]",
            "bf16[1024,2048]", "--kw", "block_shape=(512, 512, 512)", "--steps", "4"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    x, y = jax.ShapeDtypeStruct((2048, 1024), jnp.bfloat16), \
        jax.ShapeDtypeStruct((1024, 2048), jnp.bfloat16)
    est = pallas_sim.estimate(_module(A3).matmul, x, y, block_shape=(512, 512, 512))
    t = est.timelines[0]
    assert f"{t.time_s * 1e3:.3f} ms" in out
    assert f"{t.mfu * 100:.1f} %" in out
    assert f"{est.last.vmem_bytes / 2**20:.1f} / 32 MiB" in out
    assert "first 4 steps" in out and "MXU |" in out and "DMA |" in out
    assert f"ridge {t.ridge_point:.1f}" in out


def test_unknown_chip_and_bad_shapes_exit_2_with_the_reason(capsys):
    assert kernel_profile.main([str(A3), "--function", "matmul", "--chip", "v9"]) == 2
    err = capsys.readouterr().err
    assert "v5e" in err and "v6e" in err and "v7" in err
    assert kernel_profile.main([str(A3), "--function", "matmul", "--shapes", "x[1]"]) == 2
    assert "DTYPE" in capsys.readouterr().err
    assert kernel_profile.main([str(A3), "--function", "nope"]) == 2
    assert "no function nope" in capsys.readouterr().err


def test_a_configuration_that_does_not_fit_vmem_reports_the_real_error(capsys):
    argv = [str(A3), "--function", "matmul", "--shapes", "f32[4096,4096]", "f32[4096,4096]",
            "--kw", "block_shape=(4096, 4096, 4096)"]
    assert kernel_profile.main(argv) == 1
    out = capsys.readouterr().out
    assert "VmemOOMError: Scoped allocation with size" in out


def test_splash_block_map_is_the_lectures_picture():
    a5 = _module(A5)
    info = a5.build_mask_info(a5.causal_mask(8), 2, 2)
    assert profile_text.render_block_map(info) == "P · · ·\nF P · ·\nF F P ·\nF F F P"
    assert profile_text.mask_info_of((1, info)) is info


def test_png_pictures_are_written(tmp_path, capsys):
    argv = [str(A3), "--function", "matmul", "--shapes", "bf16[1024,1024]", "bf16[1024,1024]",
            "--kw", "block_shape=(512, 512, 512)", "--png", str(tmp_path)]
    assert kernel_profile.main(argv) == 0
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert any(n.endswith("_timeline.png") for n in pngs)
    assert any(n.endswith("_roofline.png") for n in pngs)
    for p in tmp_path.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_unfinished_handout_reports_its_error(capsys):
    handout = ROOT / "assignments" / "a3_matmul.py"
    assert kernel_profile.main([str(handout)]) == 1
    out = capsys.readouterr().out
    assert "NotImplementedError: Need to implement for Task 3.2" in out


def test_a_notebook_is_profiled_as_the_module_its_code_cells_make(tmp_path, capsys):
    """`pallas-lab profile X.ipynb` failed ("does not compile: not a Python file"); students
    submit notebooks too. Now the notebook's code cells are converted as the grader converts
    them and profiled: the same table as the .py it was made from."""
    import jupytext

    notebook = tmp_path / "a3_matmul.ipynb"
    jupytext.write(jupytext.read(A3), notebook)
    argv = ["profile", "--function", "matmul", "--shapes", "bf16[2048,1024]",
            "bf16[1024,2048]", "--kw", "block_shape=(512, 512, 512)"]
    assert cli.main([argv[0], str(A3), *argv[1:]]) == 0
    from_py = capsys.readouterr().out
    assert cli.main([argv[0], str(notebook), *argv[1:]]) == 0
    assert capsys.readouterr().out == from_py
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json", encoding="utf-8")
    assert cli.main(["profile", str(broken), "--function", "matmul"]) == 2
    assert "broken.ipynb" in capsys.readouterr().err


def test_png_titles_name_the_profiled_configuration_and_have_legends(tmp_path, monkeypatch):
    """The PNGs were titled by the call's name ("<lambda>" for a lambda kernel, "kernel"
    for most) and had no legend. Now each title names the function and configuration
    profiled, and every timeline and roofline has a legend of its marks."""
    from matplotlib.axes import Axes

    titles, legends = [], []
    set_title, legend = Axes.set_title, Axes.legend
    monkeypatch.setattr(Axes, "set_title",
                        lambda self, text, *a, **k: titles.append(text) or set_title(
                            self, text, *a, **k))
    monkeypatch.setattr(Axes, "legend",
                        lambda self, *a, **k: legends.append(k.get("handles") or
                                                            self.get_legend_handles_labels()[1])
                        or legend(self, *a, **k))
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16)
    est = pallas_sim.estimate(lambda a, b: _module(A3).matmul(a, b), x, x)
    paths = profile_pictures.write_pngs(est, tmp_path, "m", None, "matmul 1024² (my blocks)")
    assert len(paths) == 2 and all(p.stat().st_size > 0 for p in paths)
    assert len(titles) == 2 and all(t.startswith("matmul 1024² (my blocks)") for t in titles)
    assert not any("<lambda>" in t for t in titles)
    assert len(legends) == 2 and all(legends), "a legend on the timeline and the roofline"


def test_a_block_shape_a_tpu_compile_refuses_is_refused_naming_the_rule(capsys):
    """(bm, bn, bk) = (40, 40, 128): a block 40 wide is neither a multiple of 128 nor the
    arrays' 80, so Mosaic's lowering refuses the kernel though interpret mode runs it;
    profile says which rule and predicts nothing, unless --lenient, which profiles it and
    lists the problem."""
    argv = [str(A3), "--function", "matmul", "--shapes", "f32[80,256]", "f32[256,80]",
            "--kw", "block_shape=(40, 40, 128)"]
    assert kernel_profile.main(argv) == 1
    out = capsys.readouterr().out
    assert "MosaicLoweringError" in out and "rule '(8, 128) tiling'" in out
    assert "--lenient" in out and "ms" not in out.split("MosaicLoweringError")[1]
    assert kernel_profile.main([*argv, "--lenient"]) == 0
    out = capsys.readouterr().out
    assert "warning: a TPU compile would refuse" in out and "rule '(8, 128) tiling'" in out
    assert "MosaicLoweringError" not in out


def _saved_pictures(monkeypatch) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """Record, for each figure saved, its file name and per axes (title, legend texts)."""
    from matplotlib.figure import Figure

    saved: list[tuple[str, list[tuple[str, list[str]]]]] = []
    savefig = Figure.savefig

    def record(self, path, *args, **kwargs):
        saved.append((Path(path).name, [
            (ax.get_title(), [t.get_text() for t in ax.get_legend().get_texts()]
             if ax.get_legend() is not None else []) for ax in self.axes]))
        return savefig(self, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return saved


def test_every_png_names_the_function_its_configuration_and_grid_with_a_legend(
        tmp_path, monkeypatch, capsys):
    """``pallas-lab profile --function matmul --png`` titled its pictures "matmul" only
    (neither the block shape nor the grid: two runs' pictures could not be told apart),
    and Splash's block map was titled "Splash tiles: ..." with no function, no
    configuration and no legend. Now each picture's title names the function, the
    configuration given and the call's grid, and each has a legend of its marks."""
    saved = _saved_pictures(monkeypatch)
    argv = ["profile", str(A3), "--function", "matmul", "--shapes", "bf16[1024,1024]",
            "bf16[1024,1024]", "--kw", "block_shape=(512, 512, 512)", "--png", str(tmp_path)]
    assert cli.main(argv) == 0
    assert len(saved) == 2, saved
    for name, axes in saved:
        (title, legend), = axes
        assert "matmul(bf16[1024,1024], bf16[1024,1024], block_shape=(512, 512, 512))" \
            in title, (name, title)
        assert "grid (2, 2, 2)" in title and "<lambda>" not in title, (name, title)
        assert legend, f"{name} has no legend"
    saved.clear()
    assert cli.main(["profile", str(A5), "--png", str(tmp_path)]) == 0
    block_map = [axes for name, axes in saved if name.endswith("_blockmap.png")]
    assert len(block_map) == 1, saved
    (title, legend), = block_map[0]
    assert "splash_attention" in title and "block 1024" in title, title
    assert "grid (" in title, title
    assert [t.split(" ")[0] for t in legend] == ["full", "partial", "skipped"], legend
    for name, axes in saved:
        assert all(t.startswith("splash_attention") for t, _ in axes) and all(
            lg for _, lg in axes), (
            name, axes)


def test_png_without_matplotlib_says_which_extra_in_one_line(tmp_path, monkeypatch, capsys):
    """The bundle's package is not called pallas-lab, so the hint names the extra and the
    folder to install it from rather than 'pallas-lab[plot]'."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    argv = ["profile", str(A3), "--function", "matmul", "--shapes", "bf16[256,256]",
            "bf16[256,256]", "--kw", "block_shape=(128, 128, 128)", "--png", str(tmp_path)]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and "install the plot extra" in err, err
    assert not list(tmp_path.glob("*.png"))
    # A TA's walk: the profile was worked out and printed first, then refused; now the
    # missing extra is said before any work, and nothing else is printed.
    assert captured.out == "", captured.out[:500]


def test_a_renamed_file_is_profiled_with_assignment(tmp_path, capsys):
    """A TA's walk: ``profile ada_a3.ipynb`` (a name ``grade --assignment a3`` grades) was
    refused with no way to say which assignment it is; ``--assignment a3`` says so."""
    renamed = tmp_path / "ada_a3.py"
    renamed.write_text(A3.read_text(encoding="utf-8"), encoding="utf-8")
    assert cli.main(["profile", str(renamed)]) == 2
    assert "give --assignment a3|a4|a5" in capsys.readouterr().err
    assert cli.main(["profile", str(renamed), "--assignment", "a3"]) == 0
    assert "matmul 512³ blocks (§4.2)" in capsys.readouterr().out
