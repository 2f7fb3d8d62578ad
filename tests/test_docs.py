"""The README and the docs site: the site builds with ``mkdocs build --strict`` (broken links and anchors,
and pages left out of the nav, fail it), every page is in the nav, the README's relative links resolve,
the README stays short with the two set-up commands on its first screen, and its config examples load.
Each check is also shown to fail on a broken copy."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
MKDOCS_YML = REPO / "mkdocs.yml"

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=120)


def nav_pages(nav) -> list[str]:
    """Every page a mkdocs ``nav:`` names, however nested."""
    if isinstance(nav, str):
        return [nav] if nav.endswith(".md") else []
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    return []


def pages_missing_from_nav(docs: Path, config: dict) -> list[str]:
    listed = set(nav_pages(config.get("nav")))
    return sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md")
                  if p.relative_to(docs).as_posix() not in listed)


def broken_links(markdown: Path) -> list[str]:
    """Relative links of ``markdown`` whose file does not exist (anchors and web links are not checked)."""
    text = re.sub(r"```.*?```", "", markdown.read_text(encoding="utf-8"), flags=re.S)  # code is not links
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        if not (markdown.parent / target.split("#", 1)[0]).exists():
            broken.append(target)
    return broken


def yaml_configs(markdown: Path) -> list[dict]:
    """The ```yaml blocks of ``markdown`` that are whole configs (they start with ``name:``)."""
    blocks = re.findall(r"```yaml\n(.*?)```", markdown.read_text(encoding="utf-8"), flags=re.S)
    return [yaml.safe_load(block) for block in blocks if block.startswith("name:")]


# ---- the site -------------------------------------------------------------------------------

def test_the_site_builds_strictly(tmp_path):
    proc = mkdocs_build(MKDOCS_YML, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "architecture" / "index.html").is_file()


def test_a_broken_link_a_broken_anchor_or_a_page_left_out_of_the_nav_fails_the_strict_build(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(MKDOCS_YML, copy / "mkdocs.yml")
    with (copy / "docs" / "index.md").open("a", encoding="utf-8") as page:
        page.write("\n[gone](no-such-page.md) and [bad anchor](config.md#no-such-heading)\n")
    (copy / "docs" / "orphan.md").write_text("# Not in the nav\n")
    proc = mkdocs_build(copy / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0
    assert "no-such-page.md" in proc.stderr
    assert "no-such-heading" in proc.stderr
    assert "orphan.md" in proc.stderr


def test_every_docs_page_is_in_the_nav(tmp_path):
    config = yaml.safe_load(MKDOCS_YML.read_text(encoding="utf-8"))
    assert config["docs_dir"] == "docs" and config["theme"]["name"] == "mkdocs"
    assert pages_missing_from_nav(DOCS, config) == []
    assert [p for p in nav_pages(config["nav"]) if not (DOCS / p).is_file()] == []
    # the check itself finds a page the nav leaves out
    (tmp_path / "a.md").write_text("# a\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# b\n")
    assert pages_missing_from_nav(tmp_path, {"nav": [{"A": "a.md"}]}) == ["sub/b.md"]
    assert pages_missing_from_nav(tmp_path, {"nav": [{"A": "a.md"}, {"Sub": [{"B": "sub/b.md"}]}]}) == []


# ---- the README -----------------------------------------------------------------------------

def test_readme_links_resolve(tmp_path):
    assert broken_links(README) == []
    # the check itself finds a broken one, and leaves web links, anchors and code alone
    sample = tmp_path / "README.md"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("# here\n")
    sample.write_text("[ok](docs/here.md#top) [web](https://example.org/x) [top](#top)\n"
                      "```\n[in code](docs/nowhere.md)\n```\n[broken](docs/gone.md)\n")
    assert broken_links(sample) == ["docs/gone.md"]


def test_readme_is_short_and_starts_with_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail into docs/"
    first_screen = "\n".join(lines[:40])
    assert "make run" in first_screen and "make test" in first_screen
    assert "docs/" in first_screen, "the first screen links to the docs"


def test_config_examples_in_the_readme_and_docs_load():
    from trtbench.api import load_config

    examples = {path.name: yaml_configs(path) for path in [README, *sorted(DOCS.glob("*.md"))]}
    assert examples["README.md"], "the README shows a config"
    for name, configs in examples.items():
        for data in configs:
            load_config(data)  # raises UserInputError, naming the key, if an example went stale


# ---- names of the code ----------------------------------------------------------------------

REPO_PATH = re.compile(r"(?<![\w/.<-])(?:trtbench|tests|scripts|benchmarks|configs|deploy|docker)/[\w./-]*\w")
DOTTED = re.compile(r"(?<![\w/.])trtbench(?:\.\w+)+")


def stale_names(text: str) -> list[str]:
    """Repository paths and dotted ``trtbench.`` names in ``text`` that do not exist (a path must be a file
    or folder of the repository; a dotted name a module, or an attribute of one, that imports)."""
    import importlib

    stale = [path for path in REPO_PATH.findall(text) if not (REPO / path).exists()]
    for name in set(DOTTED.findall(text)):
        parts, found = name.split("."), None
        for cut in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                found = getattr(found, attr, None)
            break
        if found is None:
            stale.append(name)
    return sorted(stale)


def test_code_paths_and_names_in_the_readme_and_docs_exist():
    for page in [README, *sorted(DOCS.glob("*.md")), REPO / "benchmarks" / "NOTES.md"]:
        assert stale_names(page.read_text(encoding="utf-8")) == [], page.name
    # the check itself finds a moved module, a missing file and a renamed function
    assert stale_names("`trtbench/measure/timing.py`, `trtbench/run_state.py`, /opt/trtbench/x.txt, "
                       "trtbench.results.compare.compare_runs, trtbench.results.compare.nothing, "
                       "trtbench.nowhere") == ["trtbench.nowhere", "trtbench.results.compare.nothing",
                                               "trtbench/run_state.py"]


# ---- the architecture map ---------------------------------------------------------------------

PACKAGE = REPO / "trtbench"
MAP_PATH = re.compile(r"(?<![\w./<-])((?:[\w*]+/)*[\w*]+\.py|(?:[a-z_]+/)+)(?![\w*])")
LAYER_ROW = re.compile(r"^\| `(\w+)` \|", re.M)


def map_paths_missing(text: str) -> list[str]:
    """What an architecture map (``text``) names that the tree lacks. A path from the repository's top
    (``trtbench/core/part.py``, ``tests/test_layers.py``) or from the package's (``core/part.py``, ``workers/``)
    must be there; a bare module name (``serving_pool.py``) or a pattern (``serving*.py``) must name a module
    somewhere in the package; and each layer of the layers table (a row that starts with a backticked name, in
    its "## Layers" section) must be a subpackage."""
    missing = []
    for path in sorted(set(MAP_PATH.findall(text))):
        pattern = path.rstrip("/")
        if pattern.split("/", 1)[0] in {"trtbench", "tests", "scripts", "benchmarks", "docs"} and "/" in pattern:
            found = list(REPO.glob(pattern))
        elif "/" in pattern:
            found = list(PACKAGE.glob(pattern))
        else:
            found = list(PACKAGE.rglob(pattern))
        if not found:
            missing.append(path)
    layers = text.split("## Layers", 1)[1].split("\n## ", 1)[0] if "## Layers" in text else ""
    missing += [name for name in LAYER_ROW.findall(layers) if not (PACKAGE / name / "__init__.py").exists()]
    return missing


def test_every_module_and_package_the_architecture_map_names_exists():
    assert map_paths_missing((DOCS / "architecture.md").read_text(encoding="utf-8")) == []
    # the check itself finds a moved package, a module gone from every folder, a pattern that matches nothing,
    # a missing folder and a layer that is no subpackage, and passes what is there
    broken = ("(`building/stage.py`; `build/stage.py`), `trtbench/core/part.py`, `serving_gone.py`, `nothing*.py`,\n"
              "`scenarios/generate/*.py` over `workers/` and `gone/`; `tests/test_layers.py`, `tests/test_nowhere.py`\n"
              "## Layers\n\n| layer | holds |\n|---|---|\n| `core` | types |\n| `build` | the build stage |\n\n"
              "## Where is X\n\n| `trtbench/cli.py` | x |\n")
    assert map_paths_missing(broken) == ["build/stage.py", "gone/", "nothing*.py", "serving_gone.py",
                                         "tests/test_nowhere.py", "build"]
