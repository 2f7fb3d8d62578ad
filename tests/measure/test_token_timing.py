"""Token metrics: every figure of a generation request from its per-step timestamps, with one definition each."""

from __future__ import annotations

import numpy as np
import pytest

from trtbench.measure.token_timing import (DEFINITIONS, TimedRequest, distribution, request_metrics, step_medians,
                                           timed_request)


def test_metrics_follow_their_definitions_from_the_timestamps():
    # started at 10 s; first token 0.2 s later, then gaps of 10, 20 and 30 ms: 4 new tokens, batch 4, prompt 128
    request = TimedRequest(start=10.0, stamps=(10.2, 10.21, 10.23, 10.26), batch=4, prompt_tokens=128)
    m = request_metrics(request)
    assert m.ttft_ms == pytest.approx(200)
    assert m.e2e_ms == pytest.approx(260)
    assert m.tpot_ms == pytest.approx(60 / 3)  # (E2E - TTFT) / (new_tokens - 1)
    assert m.itl_ms == pytest.approx((10, 20, 30))
    assert m.decode_tokens_per_s == pytest.approx(4 * 3 / 0.06)  # batch x (new_tokens - 1) / (E2E - TTFT)
    assert m.prefill_tokens_per_s == pytest.approx(4 * 128 / 0.2)  # batch x prompt_tokens / TTFT
    assert set(DEFINITIONS) == {"TTFT", "TPOT", "ITL", "decode tok/s", "prefill tok/s", "E2E"}


def test_one_new_token_has_no_tpot():
    with pytest.raises(ValueError, match="two new tokens"):
        request_metrics(TimedRequest(0.0, (0.1,), 1, 8))


def test_distribution_and_per_step_medians():
    assert distribution([1, 2, 3, 4, 100])["p50"] == 3 and distribution([1, 2])["count"] == 2
    a = request_metrics(TimedRequest(0.0, (0.1, 0.11, 0.13), 1, 8))
    b = request_metrics(TimedRequest(0.0, (0.1, 0.13, 0.17), 1, 8))
    assert step_medians([a, b]) == pytest.approx([20, 30])


class _Session:
    def __init__(self, stamps_per_step=1):
        self.stamps_per_step = stamps_per_step

    def generate(self, prompt, new_tokens, stamp):
        for _ in range(new_tokens * self.stamps_per_step):
            stamp()
        return np.zeros((prompt.shape[0], new_tokens), dtype=np.int64)


def test_the_harness_stamps_each_step_and_refuses_a_session_that_miscounts():
    request = timed_request(_Session(), np.zeros((2, 5), dtype=np.int64), 3)
    assert len(request.stamps) == 3 and request.batch == 2 and request.prompt_tokens == 5
    assert request.start <= request.stamps[0] <= request.stamps[-1]
    with pytest.raises(RuntimeError, match="stamped 6 step"):
        timed_request(_Session(2), np.zeros((1, 5), dtype=np.int64), 3)


def test_logit_agreement_counts_top1_only_where_eager_is_decided():
    from trtbench.measure.logit_accuracy import logit_agreement, matching_prefix

    reference = np.array([[[0.0, 1.0, 0.5], [0.3, 0.3001, 0.0], [2.0, 0.0, 0.0]]])
    logits = np.array([[[0.0, 1.0, 0.6], [0.3001, 0.3, 0.0], [0.0, 2.0, 0.0]]])
    got = logit_agreement(logits, reference, margin=0.01)
    assert got["positions"] == 3 and got["top1_positions"] == 2  # the near tie (0.3 vs 0.3001) left out
    assert got["top1_agree"] == 0.5  # position 0 agrees, position 2 does not
    assert got["max_abs_err"] == pytest.approx(2.0) and got["cosine_min"] == pytest.approx(0.0)
    assert logit_agreement(reference, reference, 0.01)["cosine_min"] == pytest.approx(1.0)
    assert matching_prefix(np.array([[1, 2, 3, 4]]), np.array([[1, 2, 9, 4]])) == 2
    assert matching_prefix(np.array([[1, 2]]), np.array([[1, 2]])) == 2
    assert matching_prefix(np.array([[1, 2, 3], [4, 5, 6]]), np.array([[1, 2, 3], [4, 0, 6]])) == 1  # the shortest


def test_a_logit_miss_names_the_figures_and_no_decided_position_is_no_miss():
    from trtbench.config.config import LogitTolerance
    from trtbench.measure.logit_accuracy import logit_misses

    found = {"cosine_min": 0.95, "top1_agree": 0.5, "top1_positions": 10, "positions": 64}
    misses = logit_misses(found, LogitTolerance(cosine_min=0.99, top1_agree_min=0.9))
    assert misses == ["cosine 0.950000 < 0.99", "top-1 agreement 0.500 < 0.9 over 10 of 64 positions"]
    assert logit_misses({**found, "top1_agree": None}, LogitTolerance(0.9, 0.9)) == []
