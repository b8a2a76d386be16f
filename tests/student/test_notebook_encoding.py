"""Notebooks whose text is not valid Unicode are refused with the cell, line and column."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from graders.student.notebook import NotebookError, read_notebook_cells


def notebook_file(path: Path, cells: list[tuple[str, str]]) -> Path:
    """A notebook of (cell type, source) cells, written as ASCII JSON so that lone
    surrogates stay ``\\udXXX`` escapes, as Jupyter would write them."""
    notebook = nbformat.v4.new_notebook()
    for kind, source in cells:
        maker = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
        notebook.cells.append(maker(source))
    path.write_text(json.dumps(notebook, ensure_ascii=True), encoding="ascii")
    return path


def test_a_lone_surrogate_in_a_code_cell_names_its_cell_line_and_column(tmp_path: Path) -> None:
    path = notebook_file(tmp_path / "a1_pallas_basics.ipynb", [
        ("markdown", "notes \ud83d"), ("code", "x = 1"), ("code", "y = 2\nz = '\udcff'")])
    with pytest.raises(NotebookError) as info:
        read_notebook_cells(path)
    assert str(info.value) == (
        "a1_pallas_basics.ipynb: cell 3, line 2, column 6 holds U+DCFF, a lone surrogate: "
        "not a character (not valid UTF-8), so it cannot be Python source")


def test_a_surrogate_in_a_markdown_cell_is_left_alone(tmp_path: Path) -> None:
    path = notebook_file(tmp_path / "n.ipynb", [("markdown", "\ud800"), ("code", "x = 1")])
    assert [(n, kind) for n, kind, _ in read_notebook_cells(path)] == [(1, "markdown"),
                                                                        (2, "code")]


def test_bytes_that_are_not_utf8_name_the_byte_and_its_offset(tmp_path: Path) -> None:
    path = notebook_file(tmp_path / "n.ipynb", [("code", "x = 'MARK'")])
    data = path.read_bytes()
    path.write_bytes(data.replace(b"MARK", b"\xff"))
    with pytest.raises(NotebookError) as info:
        read_notebook_cells(path)
    assert str(info.value) == (f"n.ipynb is not valid UTF-8 (byte 0xff at offset "
                               f"{data.index(b'MARK')}); a notebook is UTF-8 JSON")
