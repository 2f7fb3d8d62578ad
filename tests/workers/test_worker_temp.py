"""A worker's temporary files go to a folder of its own, removed once it has ended however it ended: torch's AOTI
loader extracts each package into the temporary folder and removes it only when the model is destroyed, which a
worker leaving by os._exit, or killed, never does (the same holds for the verify server's forks). torch.compile's
cache stays where the parent has it."""

from __future__ import annotations

import os
import tempfile

from toy_runtimes import ExtractsLikeAoti
from trtbench.workers.loop import spawn_workers, start_workers


def test_what_a_worker_extracts_is_removed_when_it_ends_by_exit_or_kill(tmp_path):
    workers = spawn_workers(2, 120.0, tmp_path)
    ready, errors = start_workers({"a": ExtractsLikeAoti(), "b": ExtractsLikeAoti()}, workers)
    assert not errors, errors
    extracted = {name: ready[name].check("where").output for name in ("a", "b")}
    for name, folder in extracted.items():
        assert os.path.isfile(os.path.join(folder, "model.so")), "the worker extracted into its temporary folder"
        assert os.path.dirname(folder) == ready[name].temp.name != tempfile.gettempdir()
    assert ready["a"].process.pid != ready["b"].process.pid
    ready["a"].close()  # asked to exit: it leaves by os._exit
    ready["b"].kill()  # killed
    for folder in extracted.values():
        assert not os.path.exists(folder) and not os.path.exists(os.path.dirname(folder))
