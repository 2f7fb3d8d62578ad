"""No import cycles: every module imports on its own, and trtbench's module-level import graph is acyclic."""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import trtbench

PACKAGE_DIR = Path(trtbench.__file__).parent

# Imports every module named on stdin alone: before each import it drops every module of the package from
# sys.modules, so nothing of the package is loaded before it, as in a fresh interpreter; the third-party libraries
# (torch above all) stay loaded, so torch is imported once rather than once a module. Compiled bytecode goes to a
# folder of the test's own (the first import compiles a module, the later ones read it), whatever
# PYTHONDONTWRITEBYTECODE says.
ISOLATED_IMPORTS = r"""
import importlib, json, sys, traceback
request = json.load(sys.stdin)
sys.dont_write_bytecode, sys.pycache_prefix = False, request["bytecode"]
package = request["package"]
failures = {}
for name in request["modules"]:
    for loaded in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except BaseException:
        failures[name] = traceback.format_exc()
print(json.dumps(failures))
"""


def package_modules() -> list[str]:
    """Every module of the package except ``__main__`` (importing it runs the command line)."""
    return sorted(info.name for info in pkgutil.walk_packages(trtbench.__path__, "trtbench.")
                  if info.name != "trtbench.__main__")


def import_failures(package: str, modules: list[str], env: dict, bytecode: Path) -> dict[str, str]:
    """{module: traceback} of the ``modules`` of ``package`` that fail to import alone, each in turn, in one child
    interpreter (``ISOLATED_IMPORTS``)."""
    request = {"package": package, "modules": modules, "bytecode": str(bytecode)}
    proc = subprocess.run([sys.executable, "-c", ISOLATED_IMPORTS], input=json.dumps(request), capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_module_imports_on_its_own(subprocess_env, tmp_path):
    modules = package_modules()
    assert len(modules) > 40 and "trtbench.pipeline.runner" in modules and "trtbench.variants.eager" in modules
    failures = import_failures("trtbench", modules, subprocess_env, tmp_path)
    assert failures == {}, "\n".join(f"--- {name}\n{tb}" for name, tb in failures.items())


def test_a_module_that_imports_only_after_another_is_caught(subprocess_env, tmp_path):
    """``a`` imports ``b``, which reads a name of ``a`` that ``a`` has not defined yet: ``a`` fails alone, though it
    imports once ``b`` has loaded it; the check imports ``b`` first and still finds ``a``."""
    pkg = tmp_path / "cyclic"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclic import b\nVALUE = 1\n")
    (pkg / "b.py").write_text("from cyclic.a import VALUE\n")
    env = dict(subprocess_env, PYTHONPATH=os.pathsep.join([str(tmp_path), subprocess_env["PYTHONPATH"]]))
    failures = import_failures("cyclic", ["cyclic.b", "cyclic.a"], env, tmp_path / "bytecode")
    assert list(failures) == ["cyclic.a"] and "VALUE" in failures["cyclic.a"]


def test_an_entry_module_imports_in_a_truly_fresh_interpreter(subprocess_env):
    for name in ("trtbench.cli", "trtbench.results.resultset"):
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True,
                              env=subprocess_env, timeout=300)
        assert proc.returncode == 0, proc.stderr


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    """module -> the trtbench modules it imports at module level (not inside functions or classes).

    ``from a.b import c`` counts as importing ``a.b`` (and ``a.b.c`` when that is a module); a
    statement under a module-level ``if``/``try`` counts too (``if TYPE_CHECKING:`` blocks do not,
    as they never run).
    """
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()

        def visit(statements):
            for node in statements:
                if isinstance(node, ast.Import):
                    targets.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom):
                    if node.level:  # relative: resolve against this module's package
                        base = name if is_package else name.rpartition(".")[0]
                        for _ in range(node.level - 1):
                            base = base.rpartition(".")[0]
                        source = f"{base}.{node.module}" if node.module else base
                    else:
                        source = node.module
                    targets.add(source)
                    targets.update(f"{source}.{alias.name}" for alias in node.names)
                elif isinstance(node, ast.If):
                    test = ast.unparse(node.test)
                    if "TYPE_CHECKING" not in test:
                        visit(node.body)
                    visit(node.orelse)
                elif isinstance(node, ast.Try):
                    visit(node.body)
                    for handler in node.handlers:
                        visit(handler.body)
                    visit(node.orelse)
                    visit(node.finalbody)

        visit(tree.body)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"x": {"y"}, "y": {"y"}}) == ["y", "y"]


def test_the_import_graph_reads_module_level_imports_only(tmp_path):
    pkg = tmp_path / "trtbench"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from trtbench.sub import b\nimport typing\nif typing.TYPE_CHECKING:\n"
                              "    from trtbench import c\n")
    (pkg / "c.py").write_text("def f():\n    from trtbench import a\ntry:\n    from . import d\nexcept ImportError:\n"
                              "    pass\n")
    (pkg / "d.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from ..c import f\n")
    graph = import_graph(pkg)
    assert graph["trtbench.a"] == {"trtbench.sub", "trtbench.sub.b"}
    assert graph["trtbench.c"] == {"trtbench.d", "trtbench"}
    assert graph["trtbench.sub.b"] == {"trtbench.c"}
    assert find_cycle(graph) is None
    (pkg / "d.py").write_text("import trtbench.a\n")  # a -> sub.b -> c -> d -> a
    assert find_cycle(import_graph(pkg)) == ["trtbench.a", "trtbench.sub.b", "trtbench.c", "trtbench.d", "trtbench.a"]


def test_trtbench_has_no_module_level_import_cycle():
    graph = import_graph()
    assert len(graph) > 40 and "trtbench.config.plan" in graph["trtbench.pipeline.runner"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
