"""The serving peak search against the M/D/c queue, simulated here: the step's pass rule (the late share's
upper confidence bound, trtbench/scenarios/serving/loadgen/rule.py) and the bisection (search.py).

A sleeper served by ``c`` workers is an M/D/c queue: Poisson arrivals, ``c`` servers, one service time.
Its true peak at a p99 bound is the highest QPS whose steady-state p99 stays within the bound: for
M/D/1 from Erlang's waiting-time formula, for M/D/c from a long simulation that the formula checks.
The search's steps are simulated runs of the default queries per step, over many seeds: numpy and
pure Python, so the figures do not depend on how busy the machine is. The peaks found are what
benchmarks/serving_peak.py measures with LoadGen and worker processes.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import statistics
from fractions import Fraction

import numpy as np
import pytest

from helpers.queue_model import (PERCENTILE, highest_qps, md_c_latencies, md_c_true_peak, mg_c_latencies,
                                 mg_c_true_peak, simulated_late_share)
from helpers.records import two_variant_set
from trtbench.core.errors import UserInputError
from trtbench.core.stats import Interval
from trtbench.scenarios.serving.loadgen.peak_estimate import (QUEUE_STEPS, Budget, ConfirmNeeds, QueueReader, Search,
                                                              SearchPlan, LoadStep, block_counts, replicate_counts,
                                                              search_peak)
from trtbench.pipeline.merge import merge_runs
from trtbench.results.resultset import ResultSet
from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary
from trtbench.scenarios.serving.scenario import Serving
from trtbench.scenarios.serving.vision.report import recommend_serving, serving_markdown
from trtbench.scenarios.serving.vision.result import LoadGenRun, ServedCase, ServingResult
from trtbench.api import compare
from trtbench.results.compare import compare_serving
from trtbench.scenarios.serving.loadgen.peaks import PeakEstimate, Verdict, searched_peak
from trtbench.scenarios.serving.loadgen.rule import (ESTIMATE_RULE, LEGACY_RULE, binomial_cdf, early_stopping_queries,
                                                     late_count, least_queries, passes, resolving_queries, rule_name)
from trtbench.scenarios.serving.loadgen.queue_model import QueueModel
from trtbench.scenarios.serving.loadgen.search import Bracket

SERVICE_S = 0.0102  # the sleeper's call
BOUND_S = 0.040
CONFIDENCE = 0.9  # ServingConfig's default
QUERIES = resolving_queries(PERCENTILE, CONFIDENCE)  # ServingConfig's default for a peak search
SEEDS = 200


@pytest.fixture(scope="module")
def true_peak() -> dict[int, float]:
    """Workers -> the sleeper's true peak."""
    return {servers: md_c_true_peak(SERVICE_S, servers, BOUND_S) for servers in (1, 2)}


def run_passes(qps: float, servers: int, rng: np.random.Generator, queries: int = QUERIES) -> bool:
    """One simulated step of the search, judged by the rule."""
    latencies = md_c_latencies(qps, SERVICE_S, servers, rng.exponential(1.0, queries))
    return passes(late_count(latencies, BOUND_S), queries, PERCENTILE, CONFIDENCE)


def test_the_simulation_matches_erlangs_formula_and_the_known_peaks(true_peak):
    assert true_peak[1] == pytest.approx(44.48, rel=0.002)
    simulated = highest_qps(simulated_late_share(SERVICE_S, 1, BOUND_S), 1 / SERVICE_S)
    assert simulated == pytest.approx(true_peak[1], rel=0.005)
    assert true_peak[2] == pytest.approx(133.6, rel=0.01)


def test_the_binomial_tail_and_the_fewest_queries_that_can_pass():
    exact = [sum(Fraction(math.comb(700, i)) * Fraction(1, 100) ** i * Fraction(99, 100) ** (700 - i)
                 for i in range(k + 1)) for k in (0, 3, 7, 12)]
    assert [binomial_cdf(k, 700, 0.01) for k in (0, 3, 7, 12)] == pytest.approx([float(v) for v in exact], rel=1e-9)
    assert least_queries(0.99, 0.99) == 459  # LoadGen's early stopping: 459 queries, none late, at p99
    assert least_queries(PERCENTILE, CONFIDENCE) == 230 and least_queries(0.9, 0.95) == 29
    for percentile, confidence in ((0.99, 0.99), (0.99, 0.95), (0.9, 0.95), (0.999, 0.9)):
        least = least_queries(percentile, confidence)
        assert passes(0, least, percentile, confidence) and not passes(0, least - 1, percentile, confidence)
        assert not passes(1, least, percentile, confidence)
    # LoadGen's MinPassingQueriesFinder(t=1) at p99 and 0.99: 661 in time with one late, 662 queries in all
    assert passes(1, 662, 0.99, 0.99) and not passes(1, 661, 0.99, 0.99)
    assert QUERIES == 7227 and resolving_queries(0.99, 0.99) == 23813


def test_the_rule_rejects_a_step_above_the_true_peak_and_accepts_one_below(true_peak):
    """(a) At 1.08x the true peak, 95% of runs or more fail; at 0.9x, most pass. The measured p99 within the
    bound (the rule before) on runs of 576 queries passes a third of the runs at 1.08x."""
    for servers in (1, 2):
        rng = np.random.default_rng(servers)
        over = [run_passes(1.08 * true_peak[servers], servers, rng) for _ in range(SEEDS)]
        under = [run_passes(0.9 * true_peak[servers], servers, rng) for _ in range(SEEDS)]
        assert sum(over) <= 0.05 * SEEDS, (servers, sum(over))
        assert sum(under) >= 0.75 * SEEDS, (servers, sum(under))
        short = [np.sort(md_c_latencies(1.08 * true_peak[servers], SERVICE_S, servers,
                                         rng.exponential(1.0, 576)))[int(0.99 * 576)] <= BOUND_S
                 for _ in range(SEEDS)]
        assert sum(short) >= 0.25 * SEEDS, (servers, sum(short))


def test_the_search_finds_the_true_peak_within_five_percent_below_and_two_above(true_peak):
    """(b) The search as the server scenario runs it, from [0, capacity] until the bracket is within 2%
    (the defaults: resolution 0.02, at most 10 steps, 7227 queries a step at p99 and 0.9), its steps
    simulated runs: the median peak over the seeds is within [0.95, 1.02] of the true peak."""
    for servers in (1, 2):
        rng = np.random.default_rng(10 + servers)
        ratios, steps = [], []
        for _ in range(SEEDS // 2):
            bracket = Bracket(0.0, servers / SERVICE_S)
            while not bracket.done(0.02, 10):
                bracket = bracket.after(run_passes(bracket.qps, servers, rng))
            assert bracket.hi - bracket.lo <= 0.02 * bracket.lo, "resolved before the steps ran out"
            ratios.append(bracket.lo / true_peak[servers])
            steps.append(bracket.steps)
        assert 0.95 <= statistics.median(ratios) <= 1.02, (servers, statistics.median(ratios))
        assert max(steps) <= 8, steps


def test_a_bracket_resolves_a_peak_near_the_capacity_in_a_few_steps():
    bracket = Bracket(0.0, 100.0)
    while not bracket.done(0.02, 10):
        bracket = bracket.after(True)
    assert bracket.steps == 6 and bracket.lo == pytest.approx(98.4375)
    bracket = Bracket(0.0, 100.0)
    while not bracket.done(0.02, 10):
        bracket = bracket.after(False)
    assert bracket.steps == 10 and bracket.lo == 0.0, "no load passed: the steps cap the search"


def served_set(rule: str, env: str = "env-a") -> ResultSet:
    results = two_variant_set(env)
    eager = next(r for r in results if r.case.variant == "eager")
    run = LoadGenRun(44.0, 0, LoadGenSummary(True, 44.0, 44.0, {"p99": 30.0}), True)
    results.add(ServedCase(eager.case.key, env, (ServingResult(loadgen_scenario="server", workers=1, threads=2,
                                                               bound_ms=40.0, percentile=0.99, peak_rule=rule,
                                                               peaks=(44.0,), runs=(run,)),)))
    return results


def test_the_rule_is_recorded_reported_and_read_as_the_old_one_when_absent():
    rule = rule_name("bound", CONFIDENCE)
    assert rule == "late-share-bound/1 at 0.9" and rule_name("loadgen", 0.99) == "loadgen-verdict"
    results = served_set(rule)
    data = json.loads(json.dumps(results.to_dict()))
    (entry,) = data["serving"][0]["results"]
    assert entry["peak_rule"] == rule
    assert ResultSet.from_dict(data).parts("served") == results.parts("served")
    del entry["peak_rule"]  # written before the rule was recorded
    (old,) = ResultSet.from_dict(data).parts("served")[0].results
    assert old.peak_rule == LEGACY_RULE == "measured-percentile"
    table = serving_markdown(results, [])
    assert "| peak rule |" in table and f"| {rule} |" in table
    (recommendation,) = recommend_serving(results)
    assert recommendation.to_dict()["choice"]["peak_rule"] == rule


def test_a_merge_of_peaks_found_by_different_rules_exits_2_naming_both(tmp_path, capsys):
    from helpers.cli import merge_command

    new, old, again = tmp_path / "new", tmp_path / "old", tmp_path / "again"
    served_set(rule_name("bound", CONFIDENCE)).save(new / "results.json")
    served_set(LEGACY_RULE, "env-b").save(old / "results.json")
    served_set(rule_name("bound", CONFIDENCE), "env-b").save(again / "results.json")
    code, _, err = merge_command(str(new), str(old), "--output", str(tmp_path / "m"), capsys=capsys)
    assert code == 2 and not (tmp_path / "m").exists(), err
    assert (f"input 2 ({old}): its serving peaks were found by the rule 'measured-percentile' and those of "
            f"input 1 ({new}) by 'late-share-bound/1 at 0.9'") in err and "fix: serve the inputs again" in err
    assert merge_runs([str(new), str(again)], tmp_path / "m").results.parts("served")
    mixed = served_set(LEGACY_RULE)
    mixed.add(ServedCase("other", "env-a", served_set(rule_name("bound", 0.99)).parts("served")[0].results))
    with pytest.raises(UserInputError, match="input 1: its serving peaks were found by the rule 'measured-percentile' "
                                             "and some of its own by 'late-share-bound/1 at 0.99'"):
        Serving.check_merge([mixed], ["input 1"])


# ---- the joint estimate (validity: estimate, the default) ---------------------------------------------------------

ESTIMATE_SEARCHES = 40
ESTIMATE_BUDGET = 10_000
STEP_QUERIES = 500
# (workers, bound in service times): 1, 2 and 4 workers at bounds of 3 to 10 service times (benchmarks/NOTES.md: all
# 17 queues of benchmarks/peak_estimate_grid.py at 100 searches each)
GRID = ((1, 3), (1, 10), (2, 4), (2, 10), (4, 3), (4, 6))


def estimate_searches(servers: int, bound_s: float, seed: int, verdict=None) -> list[Search]:
    """``ESTIMATE_SEARCHES`` searches of the joint estimate as the server scenario runs them without batching
    (``search_peak`` read through the queue model of the recorded service times, all one here), each step a simulated
    LoadGen run of ``STEP_QUERIES`` queries (LoadGen's minimum duration below it) with its own arrivals, as each step
    has its own schedule seed; ``verdict``: the plan's ``verdict_queries``."""
    rng = np.random.default_rng(seed)
    model = QueueModel((SERVICE_S,), servers, bound_s)
    plan = SearchPlan(1 - PERCENTILE, servers / SERVICE_S, STEP_QUERIES, 0.1, 0.02, Budget(ESTIMATE_BUDGET), verdict,
                      QueueReader(lambda steps: model))

    def step(qps: float, repeat: int, queries: int):
        return md_c_latencies(qps, SERVICE_S, servers, rng.exponential(1.0, queries)) > bound_s, None
    return [search_peak(step, plan, rng) for _ in range(ESTIMATE_SEARCHES)]


@pytest.fixture(scope="module")
def estimated() -> dict[tuple[int, int], tuple[list[Search], float]]:
    """(workers, bound in service times) -> the searches (seeds not those the estimate was tuned on) and the true
    peak; LoadGen's early stopping sizes the confirming runs."""
    verdict = functools.partial(early_stopping_queries, percentile=PERCENTILE)
    return {(servers, times): (estimate_searches(servers, times * SERVICE_S, 7919 * servers + times, verdict),
                               md_c_true_peak(SERVICE_S, servers, times * SERVICE_S)) for servers, times in GRID}


def covering_floor(searches: int, level: float = 0.9, risk: float = 0.01) -> int:
    """The fewest of ``searches`` independent intervals of coverage ``level`` that cover the truth, but for a chance
    of ``risk``: 31 of 40 at 90% and 1%."""
    return max(t for t in range(searches + 1) if binomial_cdf(t - 1, searches, level) <= risk)


def test_the_joint_estimate_finds_the_true_peak_within_its_interval_across_queues(estimated):
    """On each queue of the grid (1, 2 and 4 workers, bounds 3-10 service times), at 500-query steps within 10,000
    queries: the median estimate within 2% of the true peak, the 90% interval covering it in at least
    :func:`covering_floor` of the searches (31 of 40: a 90% interval falls below that once in a hundred grids), its
    median width 3-25% of the peak, no search over the budget and each confirming run at the low end."""
    assert covering_floor(ESTIMATE_SEARCHES) == 31
    for queue, (searches, peak) in estimated.items():
        ratios = [s.estimate.value / peak for s in searches]
        assert 0.98 <= statistics.median(ratios) <= 1.02, (queue, statistics.median(ratios))
        covered = sum(s.estimate.low <= peak <= s.estimate.high for s in searches)
        assert covered >= covering_floor(len(searches)), (queue, covered)
        assert 0.03 <= statistics.median(s.estimate.rel_width for s in searches) <= 0.25, queue
        assert all(s.read_by == "queue" for s in searches)
        assert max(s.queries for s in searches) <= ESTIMATE_BUDGET
        assert all(s.confirm.qps == s.estimate.low for s in searches if s.confirm is not None)


def test_the_confirming_run_has_the_queries_loadgens_early_stopping_needs_at_the_expected_late_share(estimated):
    """Each confirming run has what LoadGen's early stopping needs at the steady-state late share the queue model
    expects at the low end (more than a step's 500 where that share is 0.2% or more), and passes it when its share is
    no more; a search without one had not the queries left that LoadGen needs."""
    searches, _ = estimated[2, 4]
    confirmed = [s for s in searches if s.confirm is not None]
    for search in searches:
        if search.confirm is None:
            needed = search.confirm_needs.queries
            assert needed is None or search.queries + needed > ESTIMATE_BUDGET
    assert len(confirmed) >= len(searches) // 4
    for search in confirmed:
        share, needed = search.confirm_needs.late_share, search.confirm_needs.queries
        assert needed == max(STEP_QUERIES, early_stopping_queries(share, PERCENTILE)) == search.confirm.queries
        late = int(search.confirm.late.sum())
        if late <= share * needed:
            assert passes(late, needed, PERCENTILE, 0.99)
    assert sum(s.confirm.queries > STEP_QUERIES for s in confirmed) >= len(confirmed) // 2
    assert sum(passes(int(s.confirm.late.sum()), s.confirm.queries, PERCENTILE, 0.99) for s in confirmed) \
        >= len(confirmed) // 2, "LoadGen's VALID at the low end, most of the time"


def test_where_the_budget_cannot_hold_the_confirming_run_the_report_says_what_it_needs():
    """A verdict that needs more than the budget has left: no confirming run, and the interval says why."""
    rng = np.random.default_rng(3)
    plan = SearchPlan(1 - PERCENTILE, 1 / SERVICE_S, 500, 0.1, 0.02, Budget(5000), lambda share: 40_000)
    search = search_peak(lambda qps, repeat, queries: (
        md_c_latencies(qps, SERVICE_S, 1, rng.exponential(1.0, queries)) > BOUND_S, None), plan, rng)
    assert search.confirm is None and search.confirm_needs.queries == 40_000 and search.queries <= 5000
    interval = searched_peak(search, 1 / SERVICE_S, None)
    peak = interval.estimate.value
    assert interval.needs == search.confirm_needs and interval.verdict is None and peak == search.estimate.value
    assert (f"LoadGen no confirming run: LoadGen's early stopping needs 40000 queries to pass at the "
            f"{search.confirm_needs.late_share:.2%} late the fitted curve expects at {interval.estimate.low:.1f}, "
            "more than the budget had left") in interval.text()
    stored = json.loads(json.dumps(interval.to_dict()))
    read = PeakEstimate.from_dict(stored, peak)
    assert read == dataclasses.replace(interval, seconds=round(interval.seconds, 3))
    assert read.to_dict() == stored and stored["confirm_needs"]["queries"] == 40_000
    older = {**stored, "confirm_needs": [stored["confirm_needs"]["late_share"], 40_000]}
    assert PeakEstimate.from_dict(older, peak) == read, "results written before it was named"


def test_loadgens_early_stopping_queries_at_a_late_share():
    assert early_stopping_queries(0.0, 0.99) == least_queries(0.99, 0.99) == 459
    for share in (0.001, 0.002, 0.004, 0.008):
        needed = early_stopping_queries(share, 0.99)
        assert passes(math.ceil(share * needed), needed, 0.99, 0.99)
        assert not passes(math.ceil(share * needed * 0.9), int(needed * 0.9), 0.99, 0.99)
    assert 1400 <= early_stopping_queries(0.004, 0.99) <= 1700 and early_stopping_queries(0.01, 0.99) is None


def test_the_m_g_c_queue_is_the_m_d_c_queue_at_one_service_time_and_a_tail_lowers_its_peak():
    """One place simulates the queue a real run is (benchmarks/serving_peak.py): with every service time the same it is
    the M/D/c queue, query for query; 2% of calls three times as long lower the peak below the M/D/c queue's at
    their median."""
    gaps = np.random.default_rng(4).exponential(1.0, 3000)
    for servers in (1, 2, 4):
        same = mg_c_latencies(80.0 * servers, np.full(3000, SERVICE_S), servers, gaps)
        assert same == pytest.approx(md_c_latencies(80.0 * servers, SERVICE_S, servers, gaps), abs=1e-9)
    services = np.where(np.arange(100) < 2, 3 * SERVICE_S, SERVICE_S)
    tail = mg_c_true_peak(services, 1, BOUND_S, queries=40_000)
    assert tail < 0.95 * md_c_true_peak(SERVICE_S, 1, BOUND_S)
    assert mg_c_true_peak(np.full(10, SERVICE_S), 1, BOUND_S, queries=40_000) == pytest.approx(44.48, rel=0.05)


def test_a_search_brackets_first_then_steps_beside_the_estimate(estimated):
    searches, peak = estimated[2, 4]
    for search in searches[:10]:
        assert search.steps[0].qps == pytest.approx(QUEUE_STEPS[-1] / SERVICE_S), "the middle of [0, 1.12 capacity]"
        later = [s.qps / peak for s in search.steps[len(search.steps) // 2:]]
        assert 0.9 <= statistics.median(later) <= 1.1 and 0.75 <= min(later) and max(later) <= 1.25, later
        assert [s.repeat for s in search.steps] == list(range(len(search.steps))), "each step its own schedule"


def test_the_interval_stops_a_search_at_its_resolution():
    """With a wide resolution and a budget that does not bind, the search stops once its interval is narrower."""
    rng = np.random.default_rng(7)
    plan = SearchPlan(1 - PERCENTILE, 1 / SERVICE_S, 1000, 0.1, 0.3, Budget(200_000))
    search = search_peak(lambda qps, repeat, queries: (
        md_c_latencies(qps, SERVICE_S, 1, rng.exponential(1.0, queries)) > BOUND_S, None), plan, rng)
    assert search.stopped_by == "resolution" and search.estimate.rel_width <= 0.3 and search.queries < 200_000


def test_the_bootstrap_resamples_the_same_blocks_at_every_step_of_a_repeat():
    """Two steps of one repeat with the same burst move together in every replicate (the same blocks drawn); in two
    repeats, apart."""
    late = np.zeros(1000, dtype=bool)
    late[100:120] = True  # one burst of 20 late queries
    rng = np.random.default_rng(0)
    together, _ = replicate_counts([LoadStep(40.0, 0, late), LoadStep(50.0, 0, late)], rng, 200)
    assert np.array_equal(together[:, 0], together[:, 1]) and together[:, 0].std() > 0
    apart, queries = replicate_counts([LoadStep(40.0, 0, late), LoadStep(50.0, 1, late)], rng, 200)
    assert not np.array_equal(apart[:, 0], apart[:, 1])
    assert queries.sum(1) == pytest.approx(np.full(200, 2000.0), abs=1000), "as many queries as the steps, on average"
    counts, per_block = block_counts([LoadStep(40.0, 0, late), LoadStep(50.0, 0, late[:450])])
    assert counts.shape == (2, 10) and counts[1].sum() == 20 and per_block[1].tolist() == [100] * 4 + [50] + [0] * 5


def test_a_step_is_the_larger_of_min_queries_and_its_rate_times_min_duration():
    plan = SearchPlan(0.01, 200.0, 500, 10.0, 0.02, Budget(10_000))
    assert plan.queries_at(44.0) == 500 and plan.queries_at(134.0) == 1340


def estimated_set(peak: float, low: float, high: float, env: str = "env-a", rule: str = ESTIMATE_RULE) -> ResultSet:
    """A served eager with one joint estimate (its interval) under ``rule``."""
    results = two_variant_set(env)
    eager = next(r for r in results if r.case.variant == "eager")
    confirm = LoadGenRun(low, 3, LoadGenSummary(True, low, low, {"p99": 30.0}), True, (12.0, 45.0), confirm=True)
    interval = PeakEstimate(Interval(peak, low, high, 0.9), "budget", 9800, 230.0, verdict=Verdict(True, 0.5)) \
        if rule == ESTIMATE_RULE else None
    results.add(ServedCase(eager.case.key, env, (ServingResult(
        loadgen_scenario="server", workers=1, threads=2, bound_ms=40.0, percentile=0.99, peak_rule=rule,
        peaks=(peak,) if interval else (low, peak, high), runs=(confirm,), interval=interval),)))
    return results


def test_compare_sets_served_peaks_side_by_side_with_their_intervals():
    base = estimated_set(40.0, 38.0, 42.0)
    news = {"higher": (50.0, 47.0, 53.0), "lower": (30.0, 28.0, 33.0), "intervals overlap": (41.0, 39.5, 43.0)}
    for verdict, new in news.items():
        (change,) = compare_serving(base, estimated_set(*new))
        assert change.verdict == verdict and change.rule == ESTIMATE_RULE
        assert change.base == Interval(40.0, 38.0, 42.0, 0.9) and change.new == Interval(*new, 0.9)
    (old_rule,) = compare_serving(estimated_set(40.0, 38.0, 42.0, rule=rule_name("bound", 0.9)), base)
    assert old_rule.verdict == "not comparable: peaks found by different rules (late-share-bound/1 at 0.9, " \
                               "joint-estimate/1 at 90%)"
    table = compare(base, estimated_set(50.0, 47.0, 53.0)).table()
    assert "| m eager fp32 w1 x t2 | joint-estimate/1 at 90% | 40.0 [38.0-42.0] | 50.0 [47.0-53.0] | higher |" in table


def test_results_written_before_the_estimate_load_with_their_rule_and_spread():
    """A result of the bisection (no interval, runs in completion order, no lost_at or confirm) reads as it was."""
    data = json.loads(json.dumps(estimated_set(40.0, 38.0, 42.0, rule=rule_name("bound", 0.9)).to_dict()))
    (entry,) = data["serving"][0]["results"]
    del entry["interval"]
    for run in entry["runs"]:
        del run["lost_at"], run["confirm"]
    (old,) = ResultSet.from_dict(data).parts("served")[0].results
    assert old.peak_rule == "late-share-bound/1 at 0.9" and old.interval is None
    assert old.peak_interval.to_dict() == {"value": 40.0, "low": 38.0, "high": 42.0}
    assert old.peak_qps == 40.0 and not old.runs[0].confirm and old.runs[0].late_flags(40.0) == [False, True]
    new = estimated_set(40.0, 38.0, 42.0)
    (estimated,) = ResultSet.from_dict(json.loads(json.dumps(new.to_dict()))).parts("served")[0].results
    assert estimated.interval == PeakEstimate(Interval(40.0, 38.0, 42.0, 0.9), "budget", 9800, 230.0,
                                              verdict=Verdict(True, 0.5))
    assert estimated.peak_run.confirm and estimated.peak_interval == Interval(40.0, 38.0, 42.0, 0.9)
    table = serving_markdown(new, [])
    assert "| 40.0 [38.0-42.0] (90%; 9800 queries, 3.8 min, stopped by budget; LoadGen VALID at 38.0) |" in table


def test_a_search_whose_steps_are_never_late_stops_at_the_capacity_bracketed():
    """No step over the allowed share (a lax bound): bisection up to the capacity until the bracket is within the
    resolution; the peak is its low end, the interval the bracket."""
    plan = SearchPlan(0.01, 100.0, 50, 0.1, 0.02, Budget(10_000))
    search = search_peak(lambda qps, repeat, queries: (np.zeros(queries, dtype=bool), None), plan,
                         np.random.default_rng(0))
    assert search.stopped_by == "resolution" and search.estimate.value == pytest.approx(98.4375)
    assert search.estimate.high == 100.0 and len(search.steps) == 6 and search.confirm.qps == search.estimate.low


def test_a_merge_keeps_the_joint_estimates_intervals(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    estimated_set(40.0, 38.0, 42.0).save(first / "results.json")
    estimated_set(44.0, 41.0, 47.0, "env-b").save(second / "results.json")
    merged = merge_runs([str(first), str(second)], tmp_path / "m").results
    intervals = sorted((r.interval.estimate for part in merged.parts("served") for r in part.results), key=str)
    assert intervals == [Interval(40.0, 38.0, 42.0, 0.9), Interval(44.0, 41.0, 47.0, 0.9)]


def test_an_invalid_confirming_run_says_it_saw_more_late_queries_than_it_was_sized_for():
    """LoadGen fails a confirming run that saw more late queries than the fitted curve expected: the verdict says
    both shares; one that saw no more than expected (or was not sized) gives its late share alone."""
    estimate, facts = Interval(110.0, 101.8, 125.8, 0.9), ("budget", 9491, 84.0)
    over = PeakEstimate(estimate, *facts, ConfirmNeeds(0.0041, 1307), Verdict(False, 0.0069))
    assert over.confirm_text == ("INVALID at 101.8 (late share 0.69%: more than the 0.41% the fitted curve expected "
                                 "there, which the run was sized to pass)")
    assert PeakEstimate(estimate, *facts, verdict=Verdict(False, 0.0069)).confirm_text == \
        "INVALID at 101.8 (late share 0.69%)"
    assert PeakEstimate(estimate, *facts, ConfirmNeeds(0.0041, 1307), Verdict(True, 0.003)).confirm_text == \
        "VALID at 101.8"


def test_a_recommended_joint_estimate_without_a_confirming_run_says_so():
    results = estimated_set(40.0, 38.0, 42.0)
    served = results.parts(ServedCase.KIND)[0]
    unconfirmed = dataclasses.replace(served.results[0], runs=())
    results = two_variant_set()
    results.add(ServedCase(served.case_key, served.environment, (unconfirmed,)))
    text = recommend_serving(results)[0].text(results.environments)
    assert "40.0 QPS [38.0-42.0] within p99 <= 40 ms (no confirming run there;" in text


def test_a_search_that_is_late_down_to_a_tenth_of_the_capacity_stops_there_and_says_why():
    plan = SearchPlan(0.01, 200.0, 300, 4.0, 0.02, Budget(3000))
    offered = []

    def every_query_late(qps: float, repeat: int, queries: int):
        offered.append(qps)
        return np.ones(queries, bool), None

    search = search_peak(every_query_late, plan, np.random.default_rng(0))
    assert offered == [100.0, 50.0, 25.0, 12.5] and search.stopped_by == "floor" and search.confirm is None
    interval = searched_peak(search, plan.capacity, None)
    assert interval.estimate == Interval(0.0, 0.0, 12.5, 0.9)
    assert interval.text() == ("below 12.5 (1300 queries, 0.0 min): more than the allowed share late at 12.5 QPS, "
                                   "a tenth of the capacity or less, where queries hardly queue: the service time "
                                   "alone misses the bound")
