"""A ``serving`` entry beside generate (issue 26): its settings' errors exit 2 naming the key; on the 2-layer tiny Llama
(eager) a generate + serving run serves each accurate point under LoadGen's token latencies, with its result part, its
report section, plot and recommendation and LoadGen's logs, where a worker SIGKILLed during a search fails that result
(exit 1) with the peak found before, while the next point is served; and a resumed run serves only what it had not,
keeping the failed result as it was (each run starts a worker process per point served, seconds of CPU each: the one
run proves both the serving and the kill, so that the resumed one serves a single point)."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import signal
import threading
import time

import pytest

pytest.importorskip("transformers")
pytest.importorskip("mlperf_loadgen")

from conftest import TINY_CONFIG, run_dict  # noqa: E402
from helpers.llm import GENERATE, SERVER, llm_config  # noqa: E402
from trtbench.cli import main  # noqa: E402
from trtbench.config.config import config_from_dict  # noqa: E402
from trtbench.core.errors import UserInputError  # noqa: E402
from trtbench.results.journal import JOURNAL_NAME  # noqa: E402
from trtbench.results.resultset import ResultSet  # noqa: E402

POINTS = ("p8-n4-b1", "p12-n4-b1", "p16-n4-b1")
KEPT, KILLED, LAST = POINTS  # the second point's worker is SIGKILLed in its search
SERVED_GENERATE = {"generate": {**GENERATE["generate"], "prompt_tokens": [8, 12, 16]}}
# beside the server: an entry under continuous batching, which eager (no engine) is skipped at, starting no worker
CONTINUOUS = {"ttft_ms": 5000, "tpot_ms": 1000, "percentile": 0.5, "qps": 80, "repeats": 1,
              "batching": {"mode": "continuous", "max_batch": 4}}


def served_config(out) -> dict:
    """Saving no artifacts: publishing eager's reloads it in a fresh process that imports transformers (seconds of
    CPU), which proves nothing here (the generate run's artifacts: tests/scenarios/generate/test_generate_run.py)."""
    return {**llm_config(out), "scenarios": [SERVED_GENERATE, {"serving": SERVER}, {"serving": CONTINUOUS}],
            "output": {"dir": str(out), "save_artifacts": False}}


@pytest.mark.parametrize("scenarios, key, says", [
    ([GENERATE, {"serving": {**SERVER, "p99_ms": 40}}], "scenarios[1].serving.p99_ms",
     "unknown key for serving beside 'generate': it is a setting of serving beside 'latency'"),
    ([GENERATE, {"serving": {"tpot_ms": 200, "find_peak": True}}], "scenarios[1].serving.ttft_ms",
     "required key is missing beside generate"),
    ([GENERATE, {"serving": {**SERVER, "tpot_ms": 0}}], "scenarios[1].serving.tpot_ms", "must be positive"),
    ([GENERATE, {"serving": {**SERVER, "qps": 2}}], "scenarios[1].serving", "exactly one of 'qps' and 'find_peak"),
    ([GENERATE, {"serving": {**SERVER, "min_queries": 3}}], "scenarios[1].serving.min_queries",
     "too few for any step of the peak search to pass"),
    ([GENERATE, {"serving": {**SERVER, "workers": [1, 1]}}], "scenarios[1].serving.workers", "duplicates"),
    ([GENERATE, {"serving": {**SERVER, "percentile": 99}}], "scenarios[1].serving.percentile", "between 0 and 1"),
    ([GENERATE, {"serving": {**SERVER, "target_qps": 2}}], "scenarios[1].serving.target_qps", "beside 'latency'"),
    ([GENERATE, {"serving": {**SERVER, "qsp": 2}}], "scenarios[1].serving.qsp", "unknown key"),
    ([{"generate": {"prompt_tokens": [8], "new_tokens": [4], "batch": [2]}}, {"serving": SERVER}],
     "scenarios[1].serving",
     "served at generate's points with batch 1, and scenarios[0].generate.batch lists none"),
    ([{"serving": SERVER}, GENERATE], "scenarios[0]", "needs the 'latency' scenario before it (or 'generate'"),
    ([GENERATE, {"serving": {**SERVER, "batching": {"max_batch": 0}}}], "scenarios[1].serving.batching.max_batch",
     "must be positive"),
    ([GENERATE, {"serving": {**SERVER, "batching": {"max_bach": 2}}}], "scenarios[1].serving.batching.max_bach",
     "unknown key"),
    ([GENERATE, {"serving": {**SERVER, "lengths": {"prompt_tokens": 8, "new_tokens": {
        "distribution": "uniform", "low": 8, "high": 4}}}}], "scenarios[1].serving.lengths.new_tokens.high",
     "is below low"),
    ([GENERATE, {"serving": {**SERVER, "lengths": {"prompt_tokens": [8, 12], "new_tokens": [1, 4]}}}],
     "scenarios[1].serving.lengths.new_tokens", "reaches 1, below 2"),
    ([GENERATE, {"serving": {**SERVER, "lengths": {"prompt_tokens": [8, 60], "new_tokens": [4, 8]}}}],
     "scenarios[1].serving.lengths", "reach 68, above model's 64 positions"),
])
def test_bad_server_entries_beside_generate_name_the_key(tmp_path, scenarios, key, says):
    with pytest.raises(UserInputError) as info:
        config_from_dict({**llm_config(tmp_path), "scenarios": scenarios})
    assert info.value.where == key and says in info.value.problem, info.value.format()


def test_token_bounds_beside_latency_exit_2_naming_the_key_and_the_fix(write_config, capsys):
    data = {**copy.deepcopy(TINY_CONFIG), "scenarios": ["latency", {"serving": {"ttft_ms": 2000, "p99_ms": 40,
                                                                                "find_peak": True}}]}
    assert main(["--config", str(write_config(data))]) == 2
    err = capsys.readouterr().err
    assert "scenarios[1].serving.ttft_ms: unknown key for serving beside 'latency': it is a setting of serving " \
        "beside 'generate'" in err, err
    assert "fix: serving beside latency takes " in err and "p99_ms" in err, err


def test_the_longest_drawn_length_over_the_models_positions_exits_2_naming_the_key(write_config, tmp_path, capsys):
    lengths = {"prompt_tokens": [8, 60], "new_tokens": {"distribution": "uniform", "low": 2, "high": 8, "step": 2}}
    assert main(["--config", str(write_config(llm_config(tmp_path, {**SERVER, "lengths": lengths})))]) == 2
    err = capsys.readouterr().err
    assert "scenarios[1].serving.lengths: the longest prompt_tokens plus the most new_tokens reach 68" in err, err
    assert "fix: keep the longest prompt plus the most new tokens at most 64" in err, err


def test_an_entry_with_lengths_serves_them_once_per_decoder_and_one_without_each_point_at_its_own(tmp_path):
    from trtbench.scenarios.serving.tokens.stage import entries_at, served_points

    mixed = {**SERVER, "lengths": {"prompt_tokens": [8, 12], "new_tokens": [2, 4], "samples": 8}}
    config = config_from_dict(llm_config(tmp_path, generate=GENERATE) | {
        "scenarios": [GENERATE, {"serving": SERVER}, {"serving": mixed}]})
    first, second = served_points(config)
    assert [index for index, _ in entries_at(config, first)] == [0, 1]
    assert [index for index, _ in entries_at(config, second)] == [0]
    (_, fixed), (_, drawn) = entries_at(config, first)
    assert fixed.query_lengths(second).draw() == ((12, 4),) and fixed.max_batch == 2
    assert set(drawn.query_lengths(first).draw()) <= {(8, 2), (8, 4), (12, 2), (12, 4)}
    assert drawn.query_lengths(first).text == "p [8, 12] n [2, 4], 8 samples seed 0"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One generate + server run of eager on the tiny Llama at three points (a static-batching entry and a
    continuous one), where the second point's worker is SIGKILLed as its search's second step starts; its output
    folder, its outcome and the pools the run started, in order."""
    from trtbench.scenarios.serving.tokens import stage as decoder_stage
    from trtbench.scenarios.serving.tokens.pool import DecoderPool

    out = tmp_path_factory.mktemp("llm") / "run"
    pools = []

    class RecordedPool(DecoderPool):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pools.append(self)

    second_step = out / "serving" / f"tiny-llama-585c6a68_eager_{KILLED}_w1" / "r0" / "step-2"  # made as it starts

    def kill_after_the_first_step():
        deadline = time.monotonic() + 600
        while not (len(pools) > 1 and second_step.exists()) and time.monotonic() < deadline:
            time.sleep(0.002)
        os.kill(pools[1].workers[0].process.pid, signal.SIGKILL)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decoder_stage, "DecoderPool", RecordedPool)
        killer = threading.Thread(target=kill_after_the_first_step, daemon=True)
        killer.start()
        outcome = run_dict(served_config(out))
        killer.join(timeout=5)
    return out, outcome, pools


def parts_by_point(out) -> dict:
    return {part.point: part for part in ResultSet.load(out).parts("served_decoder")}


def test_a_generate_and_server_run_serves_each_point_and_reports_it(served):
    out, outcome, _ = served
    assert outcome.exit_code == 1, "a dead worker fails the run (test_a_worker_killed_in_a_search_fails_that_result...)"
    parts = parts_by_point(out)
    assert set(parts) == set(POINTS)
    generate = {row.point: row for row in ResultSet.load(out).parts("generate")}
    for point, part in parts.items():
        assert part.key == generate[point].key
        assert (part.slot, part.decoder, part.precision) == ("eager", "eager", "fp32")
        if point == KILLED:
            continue
        result, _ = part.results  # the continuous entry's: test_a_decoder_without_an_engine_is_skipped...
        assert result.status == "ok" and result.workers == 1 and result.threads == 1, result.reason
        assert result.peak_rule == "late-share-bound/1 at 0.9" and result.bounds_text == \
            "p50 TTFT <= 5000 ms, TPOT <= 1000 ms"
        assert 0 < result.service["ttft_ms"] < result.service["e2e_ms"] and result.service["tpot_ms"] > 0
        assert result.capacity_qps == pytest.approx(2e3 / result.service["e2e_ms"]), "a worker completes up to 2"
        assert result.batching == {"mode": "static", "max_batch": 2, "window_ms": 5.0}
        prompt = int(point.split("-")[0][1:])
        assert (result.lengths["prompt_tokens"], result.lengths["new_tokens"]) == ([prompt], [4])
        assert result.lengths_text == f"p {prompt} n 4" and result.batching_text == "static, up to 2 in 5 ms"
        assert len(result.steps) == 3 and all(step.passed for step in result.steps), "bounds no step misses"
        assert result.peaks == (result.steps[-1].offered_qps,) and result.peak_step == result.steps[-1]
        for step in result.steps:
            assert step.queries >= 4 and step.late == 0 and step.goodput == 1.0 and not step.error
            assert set(step.batches) <= {1, 2} and sum(b * n for b, n in step.batches.items()) == step.queries
            assert 0 < step.percentile_ms("ttft", 0.5) < 5000 and step.output_tokens_per_s > 0
            assert step.summary.ttft_ms["p50"] > 0 and step.summary.tpot_ms["p50"] > 0, "LoadGen's token latencies"
            assert sorted(p.name for p in (out / step.log_dir).iterdir()) == ["mlperf_log_detail.txt",
                                                                               "mlperf_log_summary.txt"]
        assert result.log_dir == f"serving/tiny-llama-585c6a68_eager_{point}_w1"
        assert (out / result.log_dir / "worker-0.log").is_file()
    doc = json.loads((out / "results.json").read_text())
    recommended = {r["point"]: r for r in doc["decoder_serving_recommendations"]}
    assert [recommended[point]["choice"]["variant"] for point in (KEPT, LAST)] == ["eager", "eager"]
    assert recommended[KILLED]["choice"] is None and recommended[KILLED]["candidates"] == 0, "a failed result is " \
        "no candidate"
    report = (out / "report.md").read_text()
    section = report.split("## LLM serving under load")[1]
    assert "| tiny-llama | p8-n4-b1 | eager | fp32 | 1 x 1 | p50 TTFT <= 5000 ms, TPOT <= 1000 ms | p 8 n 4 | " \
        "static, up to 2 in 5 ms |" in section
    assert "TTFT p50 / p50 ms" in section and "VALID" in section
    assert "![decoder_serving](plots/decoder_serving.png)" in section
    assert (out / "plots" / "decoder_serving.png").is_file()
    assert "## Recommendation under load (LLM serving)" in section and "tiny-llama p16-n4-b1: under load, eager fp32 " \
        "with 1 worker(s) x 1 thread(s), batching static, up to 2 in 5 ms:" in section


def test_the_command_line_recommends_under_load_and_merge_refuses_peaks_of_another_rule(served):
    from trtbench.scenarios.serving.scenario import Serving

    out, _, _ = served
    results, other = ResultSet.load(out), ResultSet.load(out)
    lines = Serving.summary(results, None)
    assert lines[0] == "recommendation under load (LLM serving):" and "tiny-llama p8-n4-b1: under load, eager fp32" \
        in lines[1], lines
    part = other.parts("served_decoder")[0]
    other.add(dataclasses.replace(part, results=(dataclasses.replace(part.results[0],
                                                                     peak_rule="late-share-bound/1 at 0.99"),
                                                 *part.results[1:])))
    Serving.check_merge([results, ResultSet.load(out)], ["a", "b"])
    with pytest.raises(UserInputError) as info:
        Serving.check_merge([results, other], ["a", "b"])
    assert info.value.where == "b" and "'late-share-bound/1 at 0.99'" in info.value.problem, info.value.format()


def test_a_decoder_without_an_engine_is_skipped_under_continuous_batching_naming_those_with_one(served):
    """In the same run, eager's result under the continuous entry is skipped at each point (the run exits 0): no
    worker started for it, the report says why, and a skipped result is no candidate of the recommendation."""
    out, _, _ = served
    for part in parts_by_point(out).values():
        _, skipped = part.results
        assert part.decoder == "eager" and skipped.status == "skipped" and not skipped.steps and not skipped.service
        assert "eager has none (those that have one: openvino_genai)" in skipped.reason, skipped.reason
        assert skipped.batching_text == "continuous, up to 4" and not skipped.log_dir
    assert sorted(p.name for p in (out / "serving").iterdir()) == [
        f"tiny-llama-585c6a68_eager_{point}_w1" for point in sorted(POINTS)], "no worker started for the skipped"
    report = (out / "report.md").read_text().split("## LLM serving under load")[1]
    assert "| continuous, up to 4 |" in report and "skipped: batching mode 'continuous'" in report
    doc = json.loads((out / "results.json").read_text())
    assert all(r["candidates"] == 1 and r["choice"]["batching"]["mode"] == "static"
               for r in doc["decoder_serving_recommendations"] if r["point"] != KILLED), \
        "a skipped result is no candidate"


def resumable_copy(out, to, drop_points) -> None:
    """A copy of run ``out`` at ``to`` as a kill would leave it before ``drop_points`` were served."""
    shutil.copytree(out, to)
    journal = to / JOURNAL_NAME
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    kept = [entry for entry in entries if entry["kind"] != "complete" and not (
        entry["kind"] == "served_decoder" and entry["served_decoder"]["point"] in drop_points)]
    journal.write_text("".join(json.dumps(entry) + "\n" for entry in kept))
    for point in drop_points:
        shutil.rmtree(to / "serving" / f"tiny-llama-585c6a68_eager_{point}_w1")


def test_a_worker_killed_in_a_search_fails_that_result_alone_and_the_next_point_is_served_on_a_pool_of_its_own(
        served):
    """The second point's worker, SIGKILLed as its search's second step starts: that result fails naming the dead
    worker, keeping the steps and the peak found before; the third point is served on a pool of its own."""
    out, _, pools = served
    parts = parts_by_point(out)
    (failed, _), (other, _) = parts[KILLED].results, parts[LAST].results
    assert failed.status == "failed" and "server 0's worker" in failed.reason and (
        "killed by signal 9" in failed.reason), failed.reason
    *steps_before, faulted = failed.steps
    assert steps_before and all(step.passed for step in steps_before) and faulted.error and not faulted.passed
    assert failed.peaks == (max(step.offered_qps for step in steps_before),)
    assert f"the peak search stopped early, at step {len(failed.steps)} (of at most 3)" in failed.reason
    assert other.status == "ok" and other.peaks, "the next point goes on, served"
    assert len(pools) == 3 and pools[2] is not pools[1], "on a pool of its own"
    assert f"served tiny-llama {KILLED} eager w1 x t1: failed:" in (out / "report.md").read_text()


def test_a_resumed_run_serves_only_the_points_it_had_not_and_keeps_a_failed_one(served, tmp_path):
    """A copy of the run as a kill would leave it before its last point was served, resumed: the first point is kept
    as it was, and so is the failed second one (a result served, not served again); generate's rows are not timed
    again; the last point is served again; the run exits 1 (the kept failure)."""
    out, _, _ = served
    again = tmp_path / "again"
    resumable_copy(out, again, drop_points=[LAST])
    before = parts_by_point(out)
    outcome = run_dict(served_config(again))
    assert outcome.exit_code == 1, "the failed result it kept fails the run"
    after = parts_by_point(again)
    assert after[KEPT] == before[KEPT] and after[KILLED] == before[KILLED], "the served points are kept as they were"
    rows = {row.point: row.data["requests"] for row in ResultSet.load(again).parts("generate")}
    assert rows == {row.point: row.data["requests"] for row in ResultSet.load(out).parts("generate")}, \
        "generate's rows are not timed again"
    (served_again, _) = after[LAST].results
    assert after[LAST] != before[LAST] and served_again.status == "ok" and served_again.peaks, "served again"
