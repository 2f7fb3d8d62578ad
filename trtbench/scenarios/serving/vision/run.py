"""The serving scenario: one variant served under LoadGen's Server load, at each worker count (more: docs/serving.md,
"Module notes", trtbench/scenarios/serving/vision/run.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Optional

from trtbench.core.knobs import Knobs
from trtbench.scenarios.serving.loadgen.peak_estimate import QueueReader, StepFailed, search_or_stop
from trtbench.scenarios.serving.loadgen.queue_model import QueueModel
from trtbench.scenarios.serving.loadgen.harness import LatencyBound, ServerLoad, run_loadgen
from trtbench.scenarios.serving.vision.config import ServingConfig
from trtbench.scenarios.serving.vision.pool import ServerSession, ServingPool, call_label
from trtbench.scenarios.serving.loadgen.peaks import searched_peak
from trtbench.scenarios.serving.vision.result import LoadGenRun, ServingResult
from trtbench.scenarios.serving.loadgen.rule import late_count, passes
from trtbench.scenarios.serving.loadgen.search import Bracket
from trtbench.core.status import Status
from trtbench.report.rows import grouped
from trtbench.workers.loop import Recipe, WorkerError

SERVICE_CALLS = 5  # calls timed alone for the service time that bounds the search


@dataclass(frozen=True)
class OfferedLoad:
    """The load of one LoadGen run: Poisson arrivals at ``qps`` from ``repeat``'s schedule."""

    qps: float
    repeat: int
    queries: Optional[int] = None


def server_load(settings: ServingConfig, load: OfferedLoad) -> ServerLoad:
    """What one run of ``settings`` offers at ``load``, bounded by its latency bound (``p99_ms``)."""
    return ServerLoad(load.qps, settings.seed + load.repeat, settings.min_duration_s, load.queries or settings.queries,
                      LatencyBound(settings.percentile, latency_ms=settings.p99_ms))


@dataclass(frozen=True)
class ServingWorkers:
    """The worker processes hosting the served variant: ``recipe_for(threads)`` gives their recipe."""

    recipe_for: Callable[[int], Recipe]
    default_threads: int
    start_timeout_s: float
    knobs: Knobs = Knobs()


def loadgen_run(pool: ServingPool, workers: int, settings: ServingConfig, load: OfferedLoad, folder: Path,
                out_dir: Path) -> tuple[LoadGenRun, list[str]]:
    """One LoadGen run offering ``load`` to a pool's first ``workers``, and why queries were lost."""
    batching = settings.batching

    def open_session(lg) -> ServerSession:
        return ServerSession(pool, workers, lambda ids: lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0)
                                                                                  for i in ids]),
                             settings.query_timeout_s, batching.max_batch if batching else 1,
                             batching.window_ms if batching else 0.0)

    session, summary = run_loadgen(open_session, 1, server_load(settings, load), folder)  # the samples: in the workers
    latencies = session.latencies_ms
    late = late_count(latencies, settings.p99_ms)
    judged = passes(late, len(latencies), settings.percentile, settings.confidence)
    met = {"loadgen": summary.valid, "bound": summary.minimums_met and summary.performance_met and judged,
           "estimate": late <= (1 - settings.percentile) * len(latencies)}[settings.validity]
    run = LoadGenRun(offered_qps=load.qps, repeat=load.repeat, summary=summary, within_bound=met and not session.lost,
                     latencies_ms=tuple(latencies), batches=dict(sorted(session.batches.items())), lost=session.lost,
                     log_dir=folder.relative_to(out_dir).as_posix(), lost_at=tuple(sorted(session.lost_issues)),
                     service_ms=tuple(session.service_ms))
    return run, session.errors


def _capacity(pool: ServingPool, workers: int, settings: ServingConfig) -> tuple[float, float, float]:
    """One query's median and fastest service time alone (ms), and the pool's capacity (QPS)."""
    took = pool.time_call(call_label(1), SERVICE_CALLS, settings.query_timeout_s)
    per_call = 1e3 / took[0]
    if settings.batching is not None:
        full = settings.batching.max_batch
        fastest_full = pool.time_call(call_label(full), SERVICE_CALLS, settings.query_timeout_s)[0]
        per_call = max(per_call, full * 1e3 / fastest_full)
    return took[len(took) // 2], took[0], workers * per_call


def _serve(pool: ServingPool, result: ServingResult, settings: ServingConfig, out_dir: Path,
           progress: Callable[[str], None]) -> ServingResult:
    folder = out_dir / result.log_dir
    service_ms, fastest_ms, capacity = _capacity(pool, result.workers, settings)
    result = replace(result, service_ms=service_ms)
    if settings.find_peak and fastest_ms > settings.p99_ms:  # no load can meet the bound: spare the runs
        return replace(result, peaks=(0.0,) * settings.repeats,
                       reason=f"no load fits: one query alone takes at least {fastest_ms:.1f} ms, over the "
                              f"{settings.p99_ms:g} ms bound")
    if settings.estimates:
        return _estimate(pool, result, settings, out_dir, capacity, progress)
    runs: list[LoadGenRun] = []
    peaks: list[float] = []
    for repeat in range(settings.repeats):
        bracket, steps = Bracket(0.0, capacity), 1 if settings.target_qps else settings.search_steps
        while not bracket.done(settings.resolution, steps):
            qps = settings.target_qps or bracket.qps
            progress(f"serve {result.log_dir} {result.label}: repeat {repeat + 1}, {qps:.1f} QPS offered")
            run, lost = loadgen_run(pool, result.workers, settings, OfferedLoad(qps, repeat),
                                    folder / f"r{repeat}-s{bracket.steps}-{qps:.1f}qps", out_dir)
            runs.append(run)
            if lost:
                reason = f"{run.lost} query(ies) lost at {qps:.1f} QPS offered: " + "; ".join(lost)
                if not settings.target_qps:
                    peaks, stopped = _stopped_search(peaks, bracket, repeat, settings)
                    reason += f"; {stopped}"
                return replace(result, status=Status.FAILED, runs=tuple(runs), peaks=tuple(peaks), reason=reason)
            bracket = bracket.after(run.within_bound)
        if not settings.target_qps:
            peaks.append(bracket.lo)
    return replace(result, runs=tuple(runs), peaks=tuple(peaks))


def _estimate(pool: ServingPool, result: ServingResult, settings: ServingConfig, out_dir: Path, capacity: float,
              progress: Callable[[str], None]) -> ServingResult:
    """The joint estimate's search on the pool; a step that loses a query fails the result."""
    runs: list[LoadGenRun] = []
    plan = settings.search_plan(capacity)
    if settings.batching is None:  # one query a call: the M/G/c queue of the recorded service times
        plan = replace(plan, reader=QueueReader(lambda steps: QueueModel.recorded(
            [ms / 1e3 for s in steps for ms in s.run.service_ms], result.workers, settings.p99_ms / 1e3)))

    def step(qps: float, repeat: int, queries: int) -> tuple[list[bool], LoadGenRun]:
        progress(f"serve {result.log_dir} {result.label}: step {repeat + 1}, {qps:.1f} QPS offered")
        run, lost = loadgen_run(pool, result.workers, settings, OfferedLoad(qps, repeat, queries),
                                out_dir / result.log_dir / f"s{repeat}-{qps:.1f}qps", out_dir)
        runs.append(run)
        if lost:
            raise StepFailed(f"{run.lost} query(ies) lost at {qps:.1f} QPS offered: " + "; ".join(lost)
                             + f"; the peak search stopped at step {repeat + 1}, as a lost query fails the result")
        return run.late_flags(settings.p99_ms), run

    search = search_or_stop(step, plan, settings.seed)
    if isinstance(search, StepFailed):
        return replace(result, status=Status.FAILED, runs=tuple(runs), reason=str(search))
    if search.confirm is not None:  # LoadGen's verdict at the interval's low end
        runs[-1] = replace(search.confirm.run, within_bound=search.confirm.run.summary.valid, confirm=True)
    interval = searched_peak(search, capacity, None if search.confirm is None else runs[-1].summary.valid)
    return replace(result, runs=tuple(runs), peaks=(interval.estimate.value,), interval=interval)


def _stopped_search(peaks: list[float], bracket: Bracket, repeat: int,
                    settings: ServingConfig) -> tuple[list[float], str]:
    """The peaks to keep when a fault stops the search of ``repeat``, and why."""
    lo = bracket.lo
    where = (f"the peak search stopped early, at step {bracket.steps + 1} (of at most {settings.search_steps}) "
             f"of search {repeat + 1} of {settings.repeats}, as a lost query fails the result")
    if lo > 0:
        return [*peaks, lo], (f"{where}; its peak is the highest load within the bound before the fault, "
                              f"{lo:.1f} QPS (a lower bound: the search did not finish)")
    return peaks, f"{where}; no load was within the bound before the fault"


def run_serving(hosts: ServingWorkers, settings: ServingConfig, out_dir: Path, name: str,
                progress: Optional[Callable[[str], None]] = None) -> list[ServingResult]:
    """Serve the variant ``hosts`` host once per worker count, logs under ``serving/<name>_w<n>/``."""
    results: dict[int, ServingResult] = {}
    for threads, counts in grouped(settings.workers,
                                   lambda count: settings.threads or max(1, hosts.default_threads // count)).items():
        planned = {workers: ServingResult(loadgen_scenario="server", workers=workers, threads=threads,
                                          bound_ms=settings.p99_ms, percentile=settings.percentile,
                                          peak_rule=settings.peak_rule,
                                          batching=asdict(settings.batching) if settings.batching else None,
                                          log_dir=f"serving/{name}_w{workers}")
                   for workers in counts}
        for result in planned.values():
            (out_dir / result.log_dir).mkdir(parents=True, exist_ok=True)
        try:
            pool = ServingPool([hosts.recipe_for(threads)] * max(counts), hosts.start_timeout_s,
                               out_dir / planned[max(counts)].log_dir, hosts.knobs, threads)
        except (WorkerError, ValueError) as err:  # ValueError: its knobs cannot be set here (binding: too few cores)
            results.update({w: replace(r, status=Status.FAILED, reason=f"the workers did not start: {err}")
                            for w, r in planned.items()})
            continue
        failed_at = None
        try:
            for workers, result in planned.items():
                result = replace(result, worker_facts=dict(pool.workers[0].facts))
                try:
                    results[workers] = _serve(pool, result, settings, out_dir, progress or (lambda text: None))
                except WorkerError as err:  # a worker that failed while its service time was measured
                    results[workers] = replace(result, status=Status.FAILED, reason=str(err))
                if results[workers].status is not Status.OK:
                    failed_at = workers
                    break  # its workers may be gone: the counts left are not served by this pool
        finally:
            pool.close()
        for workers, result in planned.items():
            results.setdefault(workers, replace(
                result, status=Status.FAILED, reason=f"not run: the pool failed at {failed_at} worker(s) before"))
    return [results[workers] for workers in settings.workers]
