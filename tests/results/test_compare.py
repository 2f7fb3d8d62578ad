"""Noise-aware comparison of two runs."""

from __future__ import annotations

import numpy as np
import pytest

from trtbench.core.case import Case
from trtbench.cli import main
from trtbench.core.errors import UserInputError
from trtbench.core.record import Record
from trtbench.results.resultset import ResultSet
from trtbench.core.stats import bootstrap_median_ratio
from trtbench.results.compare import compare_runs


def case(variant: str, shapes=((2, 3, 16, 16),)) -> Case:
    return Case(model="python:toy_models:tiny_cnn", variant=variant, precision="fp32", point="opt",
                input_shapes=shapes, threads=2, device="cpu")


def run_set(samples_by_variant: dict, shapes=((2, 3, 16, 16),), environment: str = "env-a") -> ResultSet:
    results = ResultSet(environments={environment: {"id": environment}})
    for variant, s in samples_by_variant.items():
        results.add(Record(case=case(variant, shapes), environment=environment, rounds=[list(map(float, s))]))
    return results


def samples(median: float, n: int = 200, spread: float = 0.03, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return median * (1 + spread * rng.standard_normal(n))


def test_clear_slowdown_and_speedup_are_called():
    base = run_set({"traced": samples(10.0, seed=1), "scripted": samples(10.0, seed=2)})
    new = run_set({"traced": samples(12.0, seed=3), "scripted": samples(8.0, seed=4)}, environment="env-b")
    verdicts = {c.case.variant: c for c in compare_runs(base, new)}
    slower, faster = verdicts["traced"].speedup, verdicts["scripted"].speedup
    # a speedup is the baseline's time over the new one's: 10 ms -> 12 ms is 0.83x, 10 ms -> 8 ms 1.25x
    assert verdicts["traced"].verdict == "slower" and slower.value == pytest.approx(1 / 1.2, rel=0.02)
    assert verdicts["scripted"].verdict == "faster" and faster.value == pytest.approx(1.25, rel=0.02)
    assert slower.low < slower.value < slower.high and faster.low > 1


def test_same_distribution_is_not_a_change():
    change, = compare_runs(run_set({"eager": samples(10.0, seed=5)}), run_set({"eager": samples(10.0, seed=6)}))
    assert change.verdict in ("no change", "within noise")


def test_noisy_small_difference_is_within_noise():
    base = run_set({"eager": samples(10.0, n=15, spread=0.3, seed=7)})
    new = run_set({"eager": samples(10.6, n=15, spread=0.3, seed=8)})
    change, = compare_runs(base, new)
    assert change.verdict == "within noise" and change.speedup.low < 1.0 < change.speedup.high


def test_results_that_cannot_be_compared_say_why():
    base = run_set({"eager": samples(10.0), "traced": samples(9.0)})
    base.add(Record(case=case("scripted"), environment="env-a", status="failed", reason="build failed"))
    new = run_set({"eager": samples(10.0), "scripted": samples(9.0)})
    new.add(Record(case=case("eager", ((4, 3, 16, 16),)), environment="env-a", rounds=[list(samples(20.0))]))
    by_case = {(c.case.variant, c.case.shapes): c.verdict for c in compare_runs(base, new)}
    assert by_case[("scripted", "2x3x16x16")] == "not comparable: no timings in one of the runs"
    # a case is the shapes too: the same label at other shapes is another case
    assert by_case[("eager", "4x3x16x16")] == "not comparable: not in the baseline"
    assert by_case[("eager", "2x3x16x16")] in ("no change", "within noise")


def test_compare_cli_on_two_real_runs(tiny_config, write_config, tmp_path, capsys):
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["output"]["save_artifacts"] = False
    path = write_config(tiny_config)
    for name in ("a", "b"):
        assert main(["--config", str(path), "--quiet", "--output", str(tmp_path / name)]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b" / "results.json")]) == 0
    out = capsys.readouterr().out
    assert out.count("| fp32 |") == 6 and "speedup (base/new)" in out


def test_missing_results_is_a_user_error(tmp_path):
    with pytest.raises(UserInputError):
        ResultSet.load(tmp_path)
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(UserInputError) as info:
        ResultSet.load(tmp_path)
    assert "not valid JSON" in info.value.problem


def generate_set(scale: dict, environment: str = "env-a") -> ResultSet:
    """A result set with one generate row per decoder, its per-request times ``scale`` times a fixed series."""
    from trtbench.core.status import Status
    from trtbench.scenarios.generate.result import GenerateRecord

    results = ResultSet(environments={environment: {"id": environment}})
    for i, (decoder, factor) in enumerate(scale.items()):
        times = {name: list(factor * samples(base, n=30, spread=0.02, seed=i)) for name, base in
                 (("ttft_ms", 20.0), ("tpot_ms", 5.0), ("e2e_ms", 35.0))}
        results.add(GenerateRecord(environment, "tiny-llama", 1, "p12-n4-b1", decoder, decoder, "fp32", Status.OK,
                                   data={"requests": times}))
    return results


def test_generate_rows_are_compared_per_time_on_their_requests(tmp_path, capsys):
    base = generate_set({"eager": 1.0, "exported": 1.0, "compiled": 1.0})
    new = generate_set({"eager": 1.0, "exported": 1.3, "compiled": 0.7, "ort_genai": 1.0}, environment="env-b")
    from trtbench.results.compare import compare_generate

    verdicts = {(c.decoder, c.metric): c for c in compare_generate(base, new)}
    assert all(verdicts["exported", m].verdict == "slower" for m in ("ttft_ms", "tpot_ms", "e2e_ms"))
    assert verdicts["compiled", "tpot_ms"].verdict == "faster"
    assert verdicts["compiled", "tpot_ms"].speedup.value == pytest.approx(1 / 0.7, rel=0.01)
    assert verdicts["eager", "e2e_ms"].verdict == "no change"
    assert verdicts["ort_genai", "all"].verdict == "not comparable: not in the baseline"
    base.save(tmp_path / "a.json")
    new.save(tmp_path / "b.json")
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out  # the CLI and the API print the same generate table
    assert "| tiny-llama | p12-n4-b1 | compiled | fp32 | tpot_ms |" in out and "| time |" in out
    assert "3 faster, 3 slower" in out
    import trtbench

    comparison = trtbench.compare(tmp_path / "a.json", tmp_path / "b.json")
    assert len(comparison.generate) == 10 and str(comparison).strip() == out.strip()
    assert len(trtbench.load_results(tmp_path / "b.json").parts("generate")) == 4


def test_each_runs_processes_are_its_sample():
    """Two runs of one config whose processes had their luck (one slow by 8% in each, a different variant's): the
    calls alone would call the 4% difference between the runs' medians a change; the processes say it is noise."""
    from helpers.records import replicated

    steady = np.full(12, 10.0)
    base, new = ResultSet(environments={"e": {"id": "e"}}), ResultSet(environments={"e": {"id": "e"}})
    base.add(replicated("traced", steady, [1.0, 1.08, 1.08], seed=1))  # two of three processes slow
    new.add(replicated("traced", steady, [1.0, 1.0, 1.08], seed=2))
    change, = compare_runs(base, new)
    assert change.processes == "3/3" and change.speedup.value == pytest.approx(1.08, rel=0.01)
    assert change.speedup.low < 1.0 < change.speedup.high and change.verdict == "within noise"
    calls_only = Record(case=change.case, environment="e", rounds=[new.records[0].samples_ms])  # one block: calls
    old_calls = Record(case=change.case, environment="e", rounds=[base.records[0].samples_ms])
    assert compare_runs(run_of(old_calls), run_of(calls_only))[0].verdict == "faster"


def run_of(*records: Record) -> ResultSet:
    results = ResultSet(environments={"e": {"id": "e"}})
    for record in records:
        results.add(record)
    return results


def test_compare_names_the_points_that_spanned_regimes():
    from helpers.records import replicated

    from trtbench.api import compare

    levels = np.r_[np.ones(20), np.full(20, 1.2)]
    shifted = run_of(replicated("eager", 10.0 * levels, [1.0, 1.01]), replicated("traced", 5.0 * levels, [1.0, 0.99]))
    steady = run_of(replicated("eager", np.full(40, 10.0), [1.0, 1.01]), replicated("traced", np.full(40, 5.0), [1.0]))
    text = str(compare(steady, shifted))
    assert "- new: m t2 opt (4x3x8x8) ran in 2 regimes: rounds 0-" in text and "baseline:" not in text
    assert "| 2/2 |" in text and "95% CI, each run's processes x rounds" in text


def test_generate_rows_are_compared_on_each_runs_replicate_processes():
    """A decoder's rows in two runs whose three processes each had their luck (one slow by 8% in the first run, two
    in the second): the requests pooled exclude equal speed between the runs, 8% apart; with the processes as
    each run's sample the interval holds it. Rows written before requests kept their process still compare, as one
    process each (test_generate_rows_are_compared_per_time_on_their_requests)."""
    from trtbench.core.status import Status
    from trtbench.results.compare import compare_generate
    from trtbench.scenarios.generate.result import GenerateRecord

    def run(factors: list[float], environment: str) -> ResultSet:
        rng = np.random.default_rng(len(environment))
        blocks = [(p, r) for r in range(12) for p in range(3)]
        times = [35.0 * factors[p] * (1 + 0.005 * rng.standard_normal()) for p, _ in blocks]
        requests = {"ttft_ms": times, "tpot_ms": times, "e2e_ms": times, "process": [p for p, _ in blocks],
                    "round": [r for _, r in blocks]}
        results = ResultSet(environments={environment: {"id": environment}})
        results.add(GenerateRecord(environment, "tiny-llama", 1, "p12-n4-b1", "exported", "exported", "fp32",
                                   Status.OK, data={"requests": requests}))
        return results

    base, new = run([1.0, 1.0, 1.08], "env-a"), run([1.08, 1.08, 1.0], "env-bb")
    change = {c.metric: c for c in compare_generate(base, new)}["e2e_ms"]
    assert change.speedup.value == pytest.approx(1 / 1.08, rel=0.01) and change.verdict == "within noise"
    assert change.speedup.low < 1 / 1.05 and change.speedup.high >= 1.0  # another draw of processes may read alike
    pooled = bootstrap_median_ratio(np.asarray(base.parts("generate")[0].data["requests"]["e2e_ms"]),
                                    np.asarray(new.parts("generate")[0].data["requests"]["e2e_ms"]))
    assert pooled.high < 0.995  # the requests alone: a difference
