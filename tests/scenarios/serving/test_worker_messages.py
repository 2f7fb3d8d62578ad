"""Serving's worker requests are serving's own: a vision server's ``Call`` is handled by
``trtbench/scenarios/serving/vision/messages.py``, which its pool names when it assigns its workers, and which each
worker loads by its file, without the scenarios' package (every scenario and their reports, matplotlib: a second of
CPU in every worker). A timing worker, assigned without it, answers a ``Call`` with an error naming the request, and
lives on, without importing the module the request's class is defined in."""

from __future__ import annotations

import pytest

from trtbench.scenarios.serving.vision.messages import call_result, send_call
from trtbench.scenarios.serving.vision.pool import ServingPool
from trtbench.workers.loop import WorkerError, spawn_workers, start_workers
from toy_runtimes import ListsModules


def test_a_server_worker_loads_its_call_handler_alone_and_a_timing_worker_refuses_the_call(tmp_path):
    (tmp_path / "timing").mkdir()
    pool = ServingPool([ListsModules()], timeout_s=120.0, log_dir=tmp_path, threads=1)
    (timing,) = spawn_workers(1, 120.0, tmp_path / "timing")
    try:
        took = pool.time_call("x1", 3, timeout_s=60.0)
        assert len(took) == 3 and all(ms >= 0 for ms in took)
        assert pool.workers[0].check("modules").output == ["trtbench.scenarios.serving.vision.messages"]

        ready, errors = start_workers({"timing": ListsModules()}, [timing])
        assert not errors, errors
        send_call(ready["timing"], "x1")
        with pytest.raises(WorkerError, match=r"failed during 'call'(.|\n)*no handler for the worker request Call "
                                              r"\(known: TimeBlock, Check, Facts, Exit\)"):
            call_result(ready["timing"], 60.0)
        assert len(ready["timing"].block("x1", 2).host_ms) == 2
        assert ready["timing"].check("modules").output == []  # the request's class imported nothing
    finally:
        pool.close()
        timing.close()
