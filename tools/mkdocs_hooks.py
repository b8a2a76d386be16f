"""mkdocs hooks of the documentation site: pages generated from the code at build time.

``mkdocs.yml`` names this file under ``hooks:``. Two pages are written into the site on
every build, never committed, so they cannot drift from the code:

* ``docs/reference/cli.md``: ``pallas-lab <command> --help`` for every subcommand of
  ``graders/cli/main.py``'s parser (and the nested ``gradescope dry-run``), each run as a
  process of its own, as a user would run it;
* ``docs/reference/simulator-api.md``: every public name of ``pallas_sim`` and its namespaces
  (their ``__all__``), with its signature and the first paragraph of its docstring.

``tests/docs/test_docs_citations.py`` reads ``GENERATED`` to accept links to them.
"""

from __future__ import annotations

import argparse
import html
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
#: The pages this hook writes, relative to ``docs/`` (docs/reference/cli.md and
#: docs/reference/simulator-api.md).
GENERATED = ("reference/cli.md", "reference/simulator-api.md")
#: Subcommands with subcommands of their own, shown after their parent.
NESTED = {"gradescope": ("dry-run",)}
#: Width of the rendered help (argparse reads COLUMNS).
HELP_COLUMNS = "88"
#: The simulator's public modules, in the order the API page shows them.
API_MODULES = ("pallas_sim", "pallas_sim.pl", "pallas_sim.pltpu", "pallas_sim.jax",
               "pallas_sim.jnp", "pallas_sim.lax", "pallas_sim.nn", "pallas_sim.random",
               "pallas_sim.tree", "pallas_sim.tree_util")


def subcommands() -> list[tuple[str, ...]]:
    """Every ``pallas-lab`` subcommand as an argv prefix, in the parser's order."""
    sys.path.insert(0, str(ROOT))
    from graders.cli.main import build_parser

    actions = [a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction)]
    commands: list[tuple[str, ...]] = []
    for name in actions[0].choices:
        commands.append((name,))
        commands.extend((name, sub) for sub in NESTED.get(name, ()))
    return commands


def help_text(command: tuple[str, ...]) -> str:
    """The output of ``pallas-lab COMMAND --help``, run from the repository root.

    Raises:
      RuntimeError: the command exits with a non-zero status.
    """
    env = {**os.environ, "COLUMNS": HELP_COLUMNS, "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "graders.cli.main", *command, "--help"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pallas-lab {' '.join(command)} --help failed:\n{done.stderr}")
    return done.stdout.rstrip() + "\n"


def cli_page() -> str:
    """The Markdown of ``docs/reference/cli.md``."""
    parts = ["# Command line\n",
             "Generated at build time from the argument parsers (`graders/cli/main.py` and the "
             "modules it hands a subcommand to) by running `pallas-lab COMMAND --help`.\n"]
    overview = subprocess.run([sys.executable, "-m", "graders.cli.main", "--help"],
                              capture_output=True, text=True, cwd=ROOT, timeout=120,
                              env={**os.environ, "COLUMNS": HELP_COLUMNS}, check=False)
    parts += ["## pallas-lab\n", "```text", overview.stdout.rstrip(), "```\n"]
    for command in subcommands():
        parts += [f"## pallas-lab {' '.join(command)}\n", "```text",
                  help_text(command).rstrip(), "```\n"]
    return "\n".join(parts)


#: reST roles in docstrings (``:func:`~pallas_sim.trace```) and their Markdown spelling.
_ROLE = re.compile(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`")


def _summary(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring, as one line of a Markdown table."""
    doc = inspect.getdoc(obj) or ""
    first = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    first = _ROLE.sub(r"`\1`", first).replace("``", "`")
    return html.escape(first, quote=False).replace("|", "\\|")


def _signature(name: str, obj: Any) -> str:
    """``name(signature)`` in code, or the bare name for exceptions and constants."""
    if not callable(obj) or (inspect.isclass(obj) and issubclass(obj, BaseException)):
        return f"`{name}`"
    try:
        return f"`{name}{inspect.signature(obj)}`".replace("|", "\\|")
    except (TypeError, ValueError):
        return f"`{name}(...)`"


def _link(text: str, page: str) -> str:
    """A Markdown link from a generated page (docs/reference/cli.md, say) to ``page``, given by
    its path from the repository root (``docs/pallas-sim.md``)."""
    return f"[{text}](../{page.removeprefix('docs/')})"


def api_page() -> str:
    """The Markdown of ``docs/reference/simulator-api.md``."""
    sys.path.insert(0, str(ROOT))
    parts = ["# Simulator API\n",
             "Generated at build time from the public modules of `pallas_sim` (their "
             "`__all__`): each name, its signature and the first paragraph of its "
             f"docstring. The rules behind them are in "
             f"{_link('pallas_sim semantics', 'docs/pallas-sim.md')}.\n"]
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        parts += [f"## `{module_name}`\n", _summary(module) + "\n",
                  "| name | summary |", "|---|---|"]
        for name in sorted(getattr(module, "__all__", ())):
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                parts.append(f"| `{name}` | module `{obj.__name__}` |")
                continue
            parts.append(f"| {_signature(name, obj)} | {_summary(obj)} |")
        parts.append("")
    return "\n".join(parts)


def on_files(files: Files, config: Any) -> Files:
    """mkdocs hook: add the generated pages to the site's files."""
    pages = dict(zip(GENERATED, (cli_page, api_page), strict=True))
    for path in GENERATED:
        files.append(File.generated(config, path, content=pages[path]()))
    return files
