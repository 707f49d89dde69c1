"""The import graph of ``mm_framework/``: no circles, and no upward imports from the low layers.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import``,
absolute or relative, at module level, inside functions (lazy imports) and under
``TYPE_CHECKING`` alike, since each is a dependency even when it runs late. An edge goes
to the most specific module named: ``from .media import policy`` is an edge to
``media.policy``, ``from . import hookimpl`` one to the package's ``__init__``.

``media/`` (bytes to pixels) and ``kernels/`` (pixel math) sit under everything else and
may take from the rest of the package only these modules of :data:`BASE`:

* ``errors`` and ``checks``: the error taxonomy and the one integer, image and bytes
  check, which every layer raises and runs;
* ``carriers`` (media only): the frozen values media produce and accept
  (``DecodedImage``, ``DecodeOptions``, ``VideoFrames``);
* ``limits`` (media only): the ``Limits`` value whose caps media enforce while reading;
* ``par`` (kernels only): the one fan-out seam kernels split an image's bands on;
* ``kernels.export`` (media only): the one-pass Pillow-to-array export the decoder shares
  with the Pillow resizers, and ``kernels.native``, whose C kernel packs Pillow's exported
  pixels for it (both import only the base and the C extension; kernels never import media).

``handoff`` is in the base only because ``carriers`` hands tensors to torch through it;
nothing below asks for it. Each allowed module imports only the base (tested), so nothing
above can reach ``media/`` or ``kernels/`` through one.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = "mm_framework"
BASE = {f"{PACKAGE}.{m}" for m in ("errors", "checks", "carriers", "handoff", "limits", "par")}
BELOW = {
    f"{PACKAGE}.media": {f"{PACKAGE}.{m}" for m in ("errors", "checks", "carriers", "limits", "kernels.export",
                                                    "kernels.native")},
    f"{PACKAGE}.kernels": {f"{PACKAGE}.{m}" for m in ("errors", "checks", "par")},
}

Edge = tuple[str, str, int]  # (importer, imported, line)


def _sources() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package ``__init__``)."""
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return found


def _extensions() -> set[str]:
    """The compiled modules setup.py declares: importable names with no .py source (built or not)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension"
        and node.args and isinstance(node.args[0], ast.Constant)
    }


def _imports(name: str, path: Path, is_pkg: bool, modules: set[str]) -> Iterator[Edge]:
    package = name if is_pkg else name.rpartition(".")[0]

    def nearest(dotted: str) -> str:
        while dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == PACKAGE]
            yield from ((name, nearest(t), node.lineno) for t in targets)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield name, sub if sub in modules else nearest(base), node.lineno


def import_graph() -> list[Edge]:
    sources = _sources()
    modules = set(sources) | _extensions()
    return [edge for name, (path, is_pkg) in sources.items() for edge in _imports(name, path, is_pkg, modules)]


def _cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), and self-imports."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = [stack.pop()]
            while component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _shown(edges: list[Edge]) -> list[str]:
    return [f"{a}:{line} imports {b}" for a, b, line in sorted(edges)]


def test_the_graph_sees_lazy_relative_and_package_imports():
    """Known edges of each kind are found, so the checks below look at the real graph."""
    edges = {(a, b) for a, b, _ in import_graph()}
    assert ("mm_framework.carriers", "mm_framework.handoff") in edges  # inside Tensor.to_torch
    assert ("mm_framework.driver", "mm_framework.family") in edges  # from .family import ...
    assert ("mm_framework.cli", "mm_framework") in edges  # from . import __version__, ...
    assert ("mm_framework.media.sources", "mm_framework.media.policy") in edges
    assert ("mm_framework.kernels.native", "mm_framework.kernels._native") in edges  # the C extension


def test_no_import_cycle():
    edges = import_graph()
    cycles = _cycles(edges)
    detail = {f"{cycle}": _shown([e for e in edges if e[0] in cycle and e[1] in cycle]) for cycle in cycles}
    assert not cycles, f"import cycles in {PACKAGE}/: {detail}"


def test_media_and_kernels_import_nothing_above_them():
    upward = [
        (a, b, line)
        for a, b, line in import_graph()
        for low, allowed in BELOW.items()
        if (a == low or a.startswith(low + "."))
        and not (b == low or b.startswith(low + ".")) and b not in allowed
    ]
    assert not upward, _shown(upward)


def test_what_the_low_layers_may_import_imports_only_the_base():
    # The base, one another (kernels.export packs through kernels.native) and the C extension.
    allowed = BASE.union(*BELOW.values())
    within = allowed | _extensions()
    outside = [(a, b, line) for a, b, line in import_graph() if a in allowed and b not in within]
    assert not outside, _shown(outside)


def test_the_two_public_levels_import_without_a_cycle():
    """``mm_framework`` and ``mm_framework.plugin`` each import cleanly first, in a fresh process, and
    neither takes from the other: both import the defining modules."""
    for first in ("mm_framework", "mm_framework.plugin"):
        code = f"import {first}, mm_framework, mm_framework.plugin"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    edges = {(a, b) for a, b, _ in import_graph()}
    assert ("mm_framework.plugin", "mm_framework") not in edges
    assert ("mm_framework", "mm_framework.plugin") not in edges
