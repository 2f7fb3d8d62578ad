"""The Python API (``trtbench.load_config``, ``run``, ``load_results``, ``compare``): the CLI's paths, from Python."""

from __future__ import annotations

import subprocess
import sys

import pytest

import trtbench
from trtbench.cli import main
from trtbench.core.errors import UserInputError


def test_the_api_is_exported_and_import_trtbench_stays_cheap():
    assert trtbench.__all__ == ["load_config", "run", "load_results", "compare", "history_series", "ingest",
                                "rebuild", "accept", "forget", "export_csv", "gate"]
    assert all(callable(getattr(trtbench, name)) for name in trtbench.__all__)
    assert set(trtbench.__all__) <= set(dir(trtbench))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        trtbench.nothing_here  # noqa: B018
    # worker processes import trtbench's submodules: the package itself must load nothing heavy
    code = ("import sys, trtbench; heavy = [m for m in ('torch', 'numpy', 'trtbench.api') if m in sys.modules]; "
            "print(trtbench.__version__, heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{trtbench.__version__} []"


def test_load_run_load_results_and_compare(tiny_config, tmp_path, capsys):
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"]["shapes"] = ["opt"]
    tiny_config["output"].update(save_artifacts=False)
    config = trtbench.load_config(tiny_config, output_dir=str(tmp_path / "out"))
    assert tiny_config["output"].get("dir") is None  # the dict passed in is not changed

    outcome = trtbench.run(config, quiet=True, p99_budget_ms=1000)
    assert outcome.exit_code == 0 and not outcome.interrupted
    assert config.budget.p99_ms is None  # the budget override does not change the config passed in
    assert {(r.case.variant, r.case.point) for r in outcome.results} == {("eager", "opt"), ("traced", "opt")}
    assert (tmp_path / "out" / "results.json").is_file()

    results = trtbench.load_results(tmp_path / "out")
    assert len(results) == len(outcome.results) == 2
    assert trtbench.load_results(tmp_path / "out" / "results.json").records[0].case == results.records[0].case

    comparison = trtbench.compare(results, tmp_path / "out")
    assert len(comparison.changes) == 2 and comparison.slower == [] and comparison.faster == []
    assert all(c.speedup.value == 1.0 for c in comparison.changes)
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "out"), str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out == str(comparison)  # what `trtbench compare` prints, character for character


def test_a_config_file_and_a_bundled_name_load_as_on_the_command_line(tiny_config, write_config):
    path = write_config(tiny_config)
    from_file = trtbench.load_config(path, variants=["eager"], device="cpu")
    assert from_file.variant_names == ["eager"] and from_file.device == "cpu"
    assert trtbench.load_config(str(path)).to_dict() == trtbench.load_config(tiny_config | {
        "output": {**tiny_config["output"], "dir": from_file.output.dir}}).to_dict()
    assert trtbench.load_config("smoke").name == "smoke"


@pytest.mark.parametrize("edit", [
    lambda c: c["benchmark"].update(iterations=0),     # a bad value
    lambda c: c.update(precison=["fp32"]),              # an unknown key (misspelt)
    lambda c: c.update(variants=["eager", "tensorrt"]),  # an unknown variant
])
def test_a_bad_dict_gives_the_error_the_cli_gives(edit, tiny_config, write_config, capsys):
    edit(tiny_config)
    with pytest.raises(UserInputError) as caught:
        trtbench.load_config(tiny_config)
    path = write_config(tiny_config)
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err == f"trtbench: error: {caught.value.format()}\n"
    assert "fix:" in str(caught.value)


def test_what_is_not_a_config_is_bad_input():
    with pytest.raises(UserInputError, match="expected a dict or a path"):
        trtbench.load_config(["name", "model"])
    with pytest.raises(UserInputError, match="file not found"):
        trtbench.load_config("no_such_config.yaml")
    with pytest.raises(UserInputError, match="no results.json here"):
        trtbench.load_results("no_such_folder")

