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
LAYERS = ["core", "analysis", "models", "measure", "quantize", "variants", "decoders", "profiling", "building",
          "diagnose", "workers", "artifacts", "results", "history", "report", "scenarios", "config", "pipeline",
          "<top>"]


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


# Inside trtbench/scenarios/: every scenario is a folder (a room), and the rooms do not import each other. The frame
# (base, entries) is shared. In serving/, vision and tokens stand on the LoadGen core (loadgen) and never import each
# other; only the dispatch (serving/__init__.py, serving/scenario.py) sees both; tokens reads generate through its
# public face (generate/__init__.py) and no other module of generate.
FRAME = ("base", "entries")
SERVING_KINDS = ("loadgen", "vision", "tokens")
ALLOWED_ROOMS = {"serving": {"serving.loadgen", "serving.vision", "serving.tokens"},
                 "serving.vision": {"serving.loadgen"}, "serving.tokens": {"serving.loadgen"}}
FACES = {"serving.tokens": {"generate"}}  # room -> rooms whose public face (the folder's __init__) it may import


def room_of(module: str, package: str) -> str:
    """The scenario folder of dotted ``module`` under ``package`` (the scenarios package): its first name, or
    ``serving.<kind>`` inside serving's kinds; "" for the frame and the package itself."""
    parts = module[len(package) + 1:].split(".") if module.startswith(package + ".") else []
    if not parts or parts[0] in FRAME:
        return ""
    if parts[0] == "serving" and len(parts) > 1 and parts[1] in SERVING_KINDS:
        return f"serving.{parts[1]}"
    return parts[0]


def scenario_violations(root: Path, package: str) -> list[str]:
    """Every import in ``root`` (the folder of scenarios ``package``) from one scenario folder into another that the
    rules above do not allow."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        module = ".".join([package, *(rel.parts[:-1] if rel.name == "__init__" else rel.parts)])
        mine = room_of(module, package)
        if not mine:
            continue
        for line, target, names, _ in imports_of(path, module, package.split(".")[0]):
            targets = [target]
            if target == package:  # "from <scenarios> import generate" imports the folder
                targets = [f"{package}.{name}" for name in names
                           if (root / name).is_dir() or (root / f"{name}.py").is_file()] or [target]
            for each in targets:
                theirs = room_of(each, package)
                face = each == f"{package}.{theirs}" and theirs in FACES.get(mine, ())
                if theirs in ("", mine) or theirs in ALLOWED_ROOMS.get(mine, ()) or face:
                    continue
                found.append(f"{path}:{line}: {module} ({mine}) imports {each} ({theirs})")
    return found


def test_scenario_folders_import_no_other_scenario_folder():
    found = scenario_violations(PACKAGE_DIR / "scenarios", "trtbench.scenarios")
    assert found == [], "imports across scenario folders:\n" + "\n".join(found)


def test_the_scenario_check_finds_kinds_importing_each_other_and_generate_past_its_face(tmp_path, monkeypatch):
    root = tmp_path / "toyscen"
    files = {
        "__init__.py": "", "base.py": "",
        "generate/__init__.py": "from toyscen.generate.result import Point\n",
        "generate/result.py": "from toyscen.base import x\nclass Point:\n    pass\n",
        "latency/__init__.py": "from toyscen import generate\n",                      # another folder: counted
        "serving/__init__.py": "from toyscen.serving.vision import run\nfrom toyscen.serving.tokens import run\n",
        "serving/loadgen/__init__.py": "", "serving/loadgen/core.py": "from toyscen.base import x\n",
        "serving/vision/__init__.py": "", "serving/tokens/__init__.py": "",
        "serving/vision/run.py": "from toyscen.serving.loadgen import core\n"          # the core: fine
                                 "from toyscen.serving.tokens.run import y\n",          # its sibling: counted
        "serving/tokens/run.py": "from toyscen.serving.loadgen.core import x\n"          # the core: fine
                                 "from toyscen.generate import Point\n"                 # generate's face: fine
                                 "def f():\n    from toyscen.generate.result import Point\n",  # past it: counted
        "serving/loadgen/up.py": "import toyscen.serving.vision.run\n",                 # the core, up: counted
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    found = scenario_violations(root, "toyscen")
    assert len(found) == 4, found
    assert any("latency" in f and "toyscen.generate (generate)" in f for f in found), found
    assert any("vision/run.py:2" in f and "serving.tokens" in f for f in found), found
    assert any("tokens/run.py:4" in f and "toyscen.generate.result" in f for f in found), found
    assert any("up.py:1" in f for f in found), found


# The LoadGen core (scenarios/serving/loadgen/) is what both kinds of serving run and read; drawing it is the report
# layer's and the kinds' report modules': the core imports no module of the report layer, under TYPE_CHECKING neither.
LOADGEN_CORE = "scenarios/serving/loadgen"


def report_imports(package_dir: Path, folder: str) -> list[str]:
    """Every import of the report layer in ``folder`` (a path under ``package_dir``, the package's folder)."""
    package, found = package_dir.name, []
    for path in sorted((package_dir / folder).rglob("*.py")):
        rel = path.relative_to(package_dir.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        found += [f"{path}:{line}: {module} imports {target}"
                  for line, target, _, _ in imports_of(path, module, package) if layer_of(target, package) == "report"]
    return found


def test_the_loadgen_core_imports_no_report_module(tmp_path):
    assert report_imports(PACKAGE_DIR, LOADGEN_CORE) == [], "the LoadGen core imports the report layer"
    core = tmp_path / "toypkg" / LOADGEN_CORE
    core.mkdir(parents=True)
    (core / "plot.py").write_text("from toypkg.report.plots import finish\n")  # counted
    (core / "kinds.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from toypkg.report.section import Plot\n")  # a type only: counted too
    (core / "fine.py").write_text("from toypkg.scenarios.base import Scenario\nfrom . import plot\n")
    found = report_imports(tmp_path / "toypkg", LOADGEN_CORE)
    assert len(found) == 2 and any("plot.py:1" in f for f in found) and any("kinds.py:3" in f for f in found), found


def test_every_scenario_is_a_folder_registered_on_one_line():
    """scenarios/ holds the frame's modules only (at most 3: __init__, base, entries) and a folder per scenario; the
    folders are the names on the one registration line of scenarios/__init__.py, and each registers its scenario."""
    from trtbench.scenarios import registered

    root = PACKAGE_DIR / "scenarios"
    modules = sorted(p.name for p in root.glob("*.py"))
    assert modules == ["__init__.py", "base.py", "entries.py"], modules
    folders = sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())
    tree = ast.parse((root / "__init__.py").read_text(encoding="utf-8"))
    lines = [node for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "trtbench.scenarios"]
    assert len(lines) == 1, "one registration line"
    assert sorted(alias.name for alias in lines[0].names) == folders
    assert set(folders) <= {c.name for c in registered()}, "a folder that registers no scenario of its name"
