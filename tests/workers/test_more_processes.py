"""Processes on demand (trtbench/workers/isolation.py, ``VariantWorkers.more``): a raced variant's further process is
started where the most allows, checked at the point before it times, lent once per point and lent again at the next
point without a new start; none where the processes take turns for memory, or where its first process's peak RSS
does not fit in the memory available. Over fake workers: nothing is spawned."""

from __future__ import annotations

import pytest

import trtbench.workers.isolation as isolation
from trtbench.workers.isolation import Replicates, VariantWorkers


class _Worker:
    """A worker that answers its check and its facts (its peak RSS: 100 MB)."""

    def __init__(self, name: str):
        self.name, self.checked = name, []

    def check(self, label: str) -> None:
        self.checked.append(label)

    def refresh_facts(self) -> dict:
        return {"peak_rss_mb": 100.0}

    def ask_exit(self) -> None: ...

    def close(self) -> None: ...


@pytest.fixture
def workers(monkeypatch):
    """A group of one slot, ``a``, with its 2 starting processes ready, up to 4; the builds it starts, by name."""
    built = []

    def start(wanted, given, **_):
        built.extend(wanted)
        return {name: _Worker(name) for name in wanted}, {}

    monkeypatch.setattr(isolation, "spawn_workers", lambda count, *args, **kw: [_Worker("idle") for _ in range(count)])
    monkeypatch.setattr(isolation, "start_workers", start)
    monkeypatch.setattr(isolation, "available_bytes", lambda: 2**40)
    group = VariantWorkers(1, 60.0, replicates=Replicates(start=2, most=4))
    group.recipes, group.workers = {"a": "recipe"}, {"a": {0: _Worker("a"), 1: _Worker("a (process 2)")}}
    yield group, built
    group._folder.cleanup()


def test_a_further_process_starts_checked_at_the_point_up_to_the_most(workers):
    group, built = workers
    group.timers("a", "opt", None)
    third = group.more("a", "opt")
    assert third.index == 2 and built == ["a (process 3)"] and group.extra["a"][2].checked == ["opt"]
    assert group.more("a", "opt").index == 3 and built == ["a (process 3)", "a (process 4)"]
    assert group.more("a", "opt") is None  # 4 processes: the most


def test_a_later_point_lends_the_started_process_again_without_a_start(workers):
    group, built = workers
    group.timers("a", "min", None)
    assert group.more("a", "min").index == 2
    timers = group.timers("a", "opt", None)
    assert sorted(timers) == [0, 1]  # each point starts in its 2 processes
    again = group.more("a", "opt")
    assert again.index == 2 and built == ["a (process 3)"] and group.extra["a"][2].checked == ["min", "opt"]


def test_none_starts_where_the_processes_take_turns_or_it_would_not_fit(workers, monkeypatch):
    group, built = workers
    group.plan = [[0], [1]]  # turns: memory is short
    assert group.more("a", "opt") is None
    group.plan = [[0, 1]]
    monkeypatch.setattr(isolation, "available_bytes", lambda: 100 * 2**20)  # 80 MB usable, its peak 100 MB
    assert group.more("a", "opt") is None and built == []
