"""The package's layers: each subpackage imports only from the ones below it.

The order is written here, bottom first. Every import counts, module-level or inside a function, and
one under ``if TYPE_CHECKING:`` too, unless every name it imports is a type (a class, a Protocol, a
type alias): annotations may name a type from above, calls may not. A self-test proves the check
finds an upward import inside a function, a sideways one, and a ``TYPE_CHECKING`` one that names a
function.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import typing
from pathlib import Path

import trtbench

PACKAGE_DIR = Path(trtbench.__file__).parent

# Bottom first. The top-level modules (__init__, __main__, cli, api) are the top.
LAYERS = ["core", "models", "measure", "quantize", "variants", "decoders", "profiling", "building", "workers", "artifacts",
          "results", "report", "scenarios", "config", "pipeline", "<top>"]


def layer_of(module: str, package: str = "trtbench") -> str:
    """The layer of dotted ``module`` (under ``package``): its first subpackage, or <top>."""
    parts = module.split(".")
    if parts[0] != package:
        raise ValueError(module)
    if len(parts) == 1 or parts[1] in ("__init__", "__main__", "cli", "api"):
        return "<top>"
    return parts[1]


def _type_checking_block(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _names_only_types(target: str, names: list[str]) -> bool:
    try:
        mod = importlib.import_module(target)
    except ImportError:
        return False
    for name in names:
        value = getattr(mod, name, None)
        if value is None:
            try:  # a submodule named in a from-import is not a type
                importlib.import_module(f"{target}.{name}")
            except ImportError:
                pass
            return False
        if not (inspect.isclass(value) or isinstance(value, (typing.TypeVar, type(typing.Union[int, str])))
                or typing.get_origin(value) is not None):
            return False
    return True


def imports_of(path: Path, module: str, package: str) -> list[tuple[int, str, list[str], bool]]:
    """(line, imported module, names, under TYPE_CHECKING) for every import of ``package`` in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package:
                    found.append((node.lineno, alias.name, [], _type_checking_block(node, parents)))
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")[: -node.level] if not path.name == "__init__.py" else \
                    module.split(".")[: len(module.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == package:
                names = [a.name for a in node.names]
                # "from pkg import sub" imports the submodule: judge it by the submodule's layer
                if len(target.split(".")) == 1 and names:
                    for name in names:
                        found.append((node.lineno, f"{target}.{name}", [], _type_checking_block(node, parents)))
                else:
                    found.append((node.lineno, target, names, _type_checking_block(node, parents)))
    return found


def violations(root: Path, package: str, layers: list[str]) -> list[str]:
    """Every import in ``root`` (the folder of ``package``) that goes up or sideways across ``layers``."""
    rank = {name: i for i, name in enumerate(layers)}
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        mine = layer_of(module, package)
        for line, target, names, type_checking in imports_of(path, module, package):
            theirs = layer_of(target, package)
            if theirs == "<top>" and target.split(".")[-1] not in ("cli", "__main__") and len(target.split(".")) > 1:
                theirs = "<top>"
            if theirs not in rank or mine not in rank:
                found.append(f"{path}:{line}: {module} ({mine}) imports {target} ({theirs}): a layer not in the list")
                continue
            if rank[theirs] <= rank[mine]:
                continue
            if type_checking and names and _names_only_types(target, names):
                continue
            where = "under TYPE_CHECKING, naming more than types, " if type_checking else ""
            found.append(f"{path}:{line}: {module} ({mine}) imports {target} ({theirs}) {where}upward")
    return found


def test_every_import_goes_down():
    assert set(LAYERS[:-1]) == {p.name for p in PACKAGE_DIR.iterdir()
                                if (p / "__init__.py").is_file()}, "a subpackage is missing from LAYERS"
    found = violations(PACKAGE_DIR, "trtbench", LAYERS)
    assert found == [], "imports that go up or sideways:\n" + "\n".join(found)


def test_the_layer_check_finds_upward_sideways_and_type_checking_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "toypkg"
    for sub in ("low", "mid", "high"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "high" / "h.py").write_text("class High:\n    pass\n\ndef helper():\n    return 1\n")
    (pkg / "mid" / "m.py").write_text("from toypkg.low import l\n")  # down: fine
    (pkg / "low" / "l.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from toypkg.high.h import High\n"        # names a type only: allowed
        "    from toypkg.high.h import helper\n"      # names a function: counted
        "def f():\n"
        "    from toypkg.mid import m\n"              # inside a function: counted
        "    return m\n")
    (pkg / "low" / "side.py").write_text("import toypkg.high.h\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = violations(pkg, "toypkg", ["low", "mid", "high", "<top>"])
    sys.modules.pop("toypkg", None)
    assert len(found) == 3, found
    assert any("l.py:5" in f and "TYPE_CHECKING" in f for f in found)
    assert any("l.py:7" in f and "toypkg.mid" in f for f in found)
    assert any("side.py:1" in f for f in found)
    # sideways: two packages of one rank cannot both be in the list, so a package missing from it is named
    found = violations(pkg, "toypkg", ["low", "high", "<top>"])
    assert any("a layer not in the list" in f for f in found), found
