"""Decoder builds on the 2-layer, hidden-size-64 test Llama: ``exported`` and ``aoti`` build a static-cache
program per (batch, cache length) in a build process of their own, and their artifacts run in a fresh process from
their own files alone (the Hugging Face folder deleted, transformers never imported), matching eager fp32's greedy
tokens and teacher-forced logits within the fp32 tolerances; a shape that was not built, and a build that fails,
are clear errors; a build process dies with its worker. AOTInductor compiles are slow on 2 cores, so aoti builds one
shape: its request's cache length is the teacher's length."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("transformers")

from helpers.llm import TINY_LLAMA  # noqa: E402

from trtbench.building.decoder_build import DecoderBuild, DecoderBuildError, build_in_child  # noqa: E402
from trtbench.building.decoder_recipe import DecoderRecipe  # noqa: E402

PROMPT, NEW = 8, 4
LENGTH = PROMPT + NEW  # the cache length of a request, and the teacher's length
SHAPES = {"exported": ((1, LENGTH), (2, LENGTH)), "aoti": ((1, LENGTH),)}

# Loads each artifact in a fresh interpreter, runs two requests of each built batch and the teacher-forced logits,
# asks for a request one token longer than it was built for, and saves what it got (that request's error);
# transformers must not have been imported by then.
FRESH = r"""
import json, sys
import numpy as np
from trtbench.decoders import get_decoder
from trtbench.measure.token_timing import timed_request
spec = json.loads(sys.argv[1])
data = np.load(spec["inputs"])
out = {}
for name, artifact in spec["artifacts"].items():
    session = get_decoder(name).load(artifact, "cpu", 1)
    for batch in spec["batches"][name]:
        prompt = data["prompt"][:batch]
        out[f"{name}-b{batch}"] = timed_request(session, prompt, spec["new"]).tokens
        out[f"{name}-b{batch}-again"] = timed_request(session, prompt, spec["new"]).tokens
    out[f"{name}-logits"] = session.logits(data["teacher"])
    out[f"{name}-facts"] = np.array(json.dumps(session.facts))
    try:
        session.generate(np.zeros((1, data["prompt"].shape[1] + 1), dtype=np.int64), spec["new"], lambda: None)
    except ValueError as err:
        out[f"{name}-unbuilt"] = np.array(str(err))
out["transformers_imported"] = np.array("transformers" in sys.modules)
np.savez(spec["result"], **out)
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(each decoder's build, eager fp32's tokens by batch and teacher-forced logits, the inputs file); the
    model folder is deleted once built."""
    from trtbench.config.config import ModelConfig
    from trtbench.decoders import get_decoder
    from trtbench.measure.token_timing import timed_request
    from trtbench.models import build_model
    from trtbench.models.hf_folder import write_model_folder

    root = tmp_path_factory.mktemp("decoder_builds")
    folder = write_model_folder(build_model(ModelConfig(name="llama", source="transformers", task="causal-lm",
                                                        kwargs=TINY_LLAMA)), root / "hf")
    rng = np.random.default_rng(0)
    prompt, teacher = rng.integers(3, 512, size=(2, PROMPT)), rng.integers(3, 512, size=(1, LENGTH))
    eager_decoder = get_decoder("eager")
    eager = eager_decoder.load(eager_decoder.build(folder, "fp32", root / "eager", 1, (), "cpu"), "cpu", 1)
    reference = {"b1": timed_request(eager, prompt[:1], NEW).tokens, "b2": timed_request(eager, prompt, NEW).tokens,
                 "logits": eager.logits(teacher)}
    eager.close()
    with ThreadPoolExecutor(2) as pool:  # both build processes at once
        builds = dict(zip(SHAPES, pool.map(lambda name: build_in_child(DecoderBuild(
            name, "fp32", str(folder), str(root / name), 1, SHAPES[name], "cpu")), SHAPES)))
    shutil.rmtree(folder)
    inputs = root / "inputs.npz"
    np.savez(inputs, prompt=prompt, teacher=teacher)
    return builds, reference, inputs


@pytest.fixture(scope="module")
def fresh(built, tmp_path_factory) -> dict:
    """What FRESH got from the artifacts of ``built``, by key."""
    builds, _, inputs = built
    result = tmp_path_factory.mktemp("fresh") / "fresh.npz"
    spec = {"artifacts": {name: str(build.artifact) for name, build in builds.items()}, "new": NEW,
            "batches": {name: [batch for batch, _ in SHAPES[name]] for name in builds},
            "inputs": str(inputs), "result": str(result)}
    proc = subprocess.run([sys.executable, "-c", FRESH, json.dumps(spec)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(result) as got:
        return dict(got)


def test_exported_and_aoti_run_from_their_files_alone_in_a_fresh_process_and_match_eager(built, fresh):
    from trtbench.config.config import default_logit_tolerances
    from trtbench.measure.logit_accuracy import logit_agreement, logit_misses

    builds, reference, _ = built
    for name, build in builds.items():
        assert build.facts["build_pid"] != os.getpid() and build.facts["build_peak_rss_mb"] > 100
        index = json.loads((build.artifact / "programs.json").read_text())
        files = {f"b{batch}-l{length}.pt2" for batch, length in SHAPES[name]}
        assert {p["file"] for p in index["programs"]} == files and index["precision"] == "fp32"
        assert {path.name for path in build.artifact.iterdir()} == files | {"programs.json"}, "its files alone"
    got = fresh
    assert not got["transformers_imported"], "the worker holds only what the decoder deploys"
    tolerance = default_logit_tolerances()["fp32"]
    for name in builds:
        for batch, _ in SHAPES[name]:
            np.testing.assert_array_equal(got[f"{name}-b{batch}"], reference[f"b{batch}"])
            np.testing.assert_array_equal(got[f"{name}-b{batch}-again"], reference[f"b{batch}"])  # cache reused
        found = logit_agreement(got[f"{name}-logits"], reference["logits"], tolerance.top1_margin)
        assert logit_misses(found, tolerance) == [] and found["max_abs_err"] < 1e-4, (name, found)
        facts = json.loads(str(got[f"{name}-facts"]))
        assert facts["programs"] == len(SHAPES[name]) and facts["export_s"] > 0
    assert json.loads(str(got["aoti-facts"]))["compile_s"] > 0


def test_a_request_at_a_shape_that_was_not_built_names_the_built_ones(fresh):
    """Asked in FRESH's process, which has loaded the artifacts already (a load in this one costs seconds more)."""
    unbuilt = str(fresh["exported-unbuilt"])
    assert re.search(r"no program for batch 1 x cache length 13 .* built for batch 1 x cache length 12, batch 2 x "
                     r"cache length 12", unbuilt), unbuilt
    assert "built for batch 1 x cache length 12; build it" in str(fresh["aoti-unbuilt"])


def test_a_failed_build_ends_its_process_with_the_traceback_in_the_error(tmp_path):
    with pytest.raises(DecoderBuildError, match=r"(?s)exported at fp32: its build process failed \(exit 1\).*"
                                                r"ValueError: exported builds a program per \(batch, cache length\) "
                                                r"and was given none"):
        build_in_child(DecoderBuild("exported", "fp32", str(tmp_path / "hf"), str(tmp_path / "out"), 1, (), "cpu"))


# A stand-in worker: starts a process that asks to die with it, as a build process does, and reports its pid.
WORKER = r"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import os, sys, time; from trtbench.building.decoder_build import "
                          "_die_with; _die_with(int(sys.argv[1])); print('ready', flush=True); time.sleep(120)",
                          str(__import__("os").getpid())], stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(120)
"""


def test_a_build_process_dies_with_its_worker():
    worker = subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, text=True)
    build = int(worker.stdout.readline())
    worker.kill()
    worker.wait()

    def dead() -> bool:  # gone, or a zombie that nobody reaps
        try:
            return open(f"/proc/{build}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    deadline = time.monotonic() + 30
    while not dead() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dead(), "the build process outlived its worker"


def test_a_recipe_asks_for_each_request_shape_and_the_teachers():
    requests = {"a": (np.zeros((1, 12)), 4), "b": (np.zeros((2, 12)), 4), "c": (np.zeros((1, 8)), 8)}
    recipe = DecoderRecipe("exported", "fp32", "", "", "cpu", 1, requests, np.zeros((1, 64), dtype=np.int64))
    assert recipe.shapes() == ((1, 16), (1, 64), (2, 16))
