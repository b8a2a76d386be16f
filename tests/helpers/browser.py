"""A real browser for page checks: Debian's headless Chromium (``.ci/run`` installs it).

``page_widths`` loads an HTML page into a frame of a given width and reports how wide its
content is, so a test can tell whether a reader at that width must scroll sideways.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

#: Names the browser goes by (Debian: chromium).
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
#: Seconds one browser run may take.
BROWSER_LIMIT = 90


def browser() -> str:
    """The browser's path; skips the test without one, and fails it under CI."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    reason = "no headless Chromium on PATH (Debian: apt-get install chromium)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}, but CI must run the browser checks")
    pytest.skip(reason)


def _run(args: list[str], page: Path) -> str:
    done = subprocess.run(
        [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={page.parent / 'chromium-profile'}", *args, page.as_uri()],
        capture_output=True, text=True, timeout=BROWSER_LIMIT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def page_widths(page_html: str, width: int, folder: Path,
                screenshot: Path | None = None) -> tuple[int, int]:
    """(content width, visible width) in CSS pixels of ``page_html`` shown in a frame
    ``width`` pixels wide; the content is wider when the reader must scroll sideways.
    With ``screenshot``, a PNG of the frame is written there too."""
    height = 1600
    frame = folder / f"frame-{width}.html"
    frame.write_text(
        '<!DOCTYPE html><html><body style="margin:0">'
        f'<iframe id="f" style="border:0;width:{width}px;height:{height}px" '
        f'srcdoc="{html.escape(page_html, quote=True)}"></iframe><script>'
        'const f = document.getElementById("f");'
        'f.addEventListener("load", () => { const d = f.contentDocument.documentElement;'
        'document.body.setAttribute("data-widths", d.scrollWidth + "x" + d.clientWidth); });'
        "</script></body></html>", encoding="utf-8")
    dom = _run([f"--window-size={width + 40},{height}", "--virtual-time-budget=5000",
                "--dump-dom"], frame)
    found = re.search(r'data-widths="(\d+)x(\d+)"', dom)
    assert found, f"the page did not load in the browser: {dom[:500]}"
    if screenshot is not None:
        _run([f"--window-size={width},{height}", "--hide-scrollbars",
              f"--screenshot={screenshot}"], frame)
    return int(found.group(1)), int(found.group(2))
