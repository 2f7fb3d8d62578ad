"""Contract of the ``trt`` decoder (trtbench/decoders/trt.py) with the real torch-tensorrt 2.14.0 wheel and with
the ``tools/llm`` sources it follows (tests/assets/tools_llm: pytorch/TensorRT at d7f2062810, pinned by sha256),
and its skip on a machine without CUDA.

The decoder is built on the CPU through the FAKE torch_tensorrt (tests/fake_torch_tensorrt.py, whose signatures
tests/variants/test_trt_contract.py holds against the wheel): the export with the static cache, the rewrite and the
save's re-export are real, only the engine is a stand-in. Its calls are then judged against the wheel's sources, read
with ``ast`` (never imported: TensorRT's native libraries cannot be installed here); the saved programs are loaded back
in a session that must generate eager's tokens and logits.

What the port (trtbench/decoders/static_cache.py) is held against in ``tools/llm``: the names of the cache inputs
(``_k_input``/``_v_input`` after the key and value they cache), the cache's positions axis (dim 2 of every
slice and cat there), the outputs (the model's, then the updated caches), ``get_model``'s loading keywords and
``compile_torchtrt``'s settings. Not the update's ops: ``tools/llm`` writes the cache with ``slice``/``cat`` at
two integer inputs ``start_idx``/``end_idx``, which ``torch_tensorrt.save`` 2.14.0 cannot take (its
``arg_inputs`` must be tensors or ``Input``: checked below), so the port writes at ``position_ids`` with
``index_copy``; and ``tools/llm``'s attention mask comes from its own converter (``torchtrt_ext``), which the port
replaces by an explicit mask. What stands for those here: every op the rewrite adds has a converter in the wheel,
and attention reaches it whole (the wheel decomposes it only with ``decompose_attention``, off by default).
"""

from __future__ import annotations

import ast
import hashlib

import numpy as np
import pytest
import torch

import fake_torch_tensorrt as fake_trt
from helpers.llm import TINY_LLAMA
from helpers.trt_wheel import (DEVICE, DYNAMO_COMPILE, INPUT, SAVE, function, kwargs_read, named_parameters,  # noqa: F401
                                save_input_types, wheel)  # (wheel: the pinned wheel's fixture)
from helpers.paths import ASSETS, REPO

TOOLS_LLM = ASSETS / "tools_llm"
PINNED = {"run_llm.py": "e536699400d090011bc3b7684d54c8f380b428f7b58d542ab3e9bf66c6acc5e1",
          "utils.py": "f8cacaea9e59815673a38120cfe4e7ea908838ad99d1f745963503c272255235",
          "static_cache_v2.py": "98293fde7c81d0530adf89c1dc5c69e725dbed9a851eeaae94c94bf5a2469ecd",
          "cache_utils.py": "0957c313d5cfe14690e53393f8b95fa169675b9abc298bbd731b33493ae3c50b"}
SHAPE = (1, 12)  # (batch, cache length): a prompt of 8 and 4 new tokens, and the teacher-forced 12
CONVERTERS = "torch_tensorrt/dynamo/conversion/aten_ops_converters.py"
PORT = REPO / "trtbench" / "decoders" / "static_cache.py"
DECODER = PORT.with_name("trt.py")


def tools_llm(name: str) -> ast.Module:
    return ast.parse((TOOLS_LLM / name).read_text())


def top_function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name)


def calls_to(tree: ast.AST, callee: str) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and ast.unparse(node.func) == callee]


def keywords(call: ast.Call) -> dict[str, str]:
    return {k.arg: ast.unparse(k.value) for k in call.keywords}


def strings(tree: ast.AST) -> set[str]:
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The trt decoder at fp32 built through the fake for SHAPE on ``device: cuda:1``, loaded back, and eager's
    session beside it; the fake's record of the calls, and of the CUDA calls a CPU machine cannot make: fakes
    that record the device asked for (``torch.cuda.set_device``, the model's move to the GPU: it stays on the
    CPU, where the session is loaded to run)."""
    from trtbench.config.config import ModelConfig
    from trtbench.decoders import get_decoder
    from trtbench.decoders import trt as trt_decoder
    from trtbench.models import build_model
    from trtbench.models.hf_folder import write_model_folder

    tmp = tmp_path_factory.mktemp("trt_decoder")
    folder = write_model_folder(build_model(ModelConfig(name="llama", source="transformers", task="causal-lm",
                                                        kwargs=TINY_LLAMA)), tmp / "hf")
    load, asked = trt_decoder.load_causal_lm, []
    with pytest.MonkeyPatch.context() as patch:
        fake = fake_trt.make_fake()
        patch.setitem(__import__("sys").modules, "torch_tensorrt", fake)
        patch.setattr(torch.cuda, "current_device", lambda: 0)
        patch.setattr(torch.cuda, "set_device", lambda device: asked.append(("set_device", str(device))))
        patch.setattr(trt_decoder, "load_causal_lm", lambda source, precision, device: asked.append(
            ("load", device)) or load(source, precision, "cpu"))
        artifact = get_decoder("trt").build(folder, "fp32", tmp / "trt", 1, (SHAPE, SHAPE), "cuda:1")
        session = get_decoder("trt").load(artifact, "cpu", 1)
        eager = get_decoder("eager")
        yield {"fake": fake, "artifact": artifact, "session": session, "asked": asked,
               "eager": eager.load(eager.build(folder, "fp32", tmp / "eager", 1, (SHAPE,), "cpu"), "cpu", 1)}


def recorded(built, name: str) -> list[dict]:
    return [kwargs for call, kwargs in built["fake"].calls if call == name]


def test_the_tools_llm_sources_are_the_pinned_ones():
    for name, sha256 in PINNED.items():
        assert hashlib.sha256((TOOLS_LLM / name).read_bytes()).hexdigest() == sha256, name


# --- the decoder, built and saved through the fake, loaded back --------------------------------------

def test_the_saved_engines_generate_eagers_tokens_and_logits(built):
    from trtbench.measure.token_timing import timed_request

    session, eager = built["session"], built["eager"]
    assert [p.name for p in built["artifact"].parent.glob("*.pt2")] == ["trt-fp32-b1-l12.pt2"]  # one per shape
    assert session.facts["programs"] == 1 and session.facts["cache"].startswith("static")
    prompt = np.random.default_rng(0).integers(3, TINY_LLAMA["vocab_size"], size=(1, 8))
    tokens = timed_request(session, prompt, 4).tokens
    assert np.array_equal(tokens, timed_request(eager, prompt, 4).tokens)
    assert np.array_equal(timed_request(session, prompt, 4).tokens, tokens), "a second request, on the caches left"
    ids = np.random.default_rng(1).integers(3, TINY_LLAMA["vocab_size"], size=SHAPE)
    np.testing.assert_allclose(session.logits(ids), eager.logits(ids), atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match=r"built for \(batch, cache length\) \[\(1, 12\)\], not \(2, 12\)"):
        session.generate(np.zeros((2, 8), dtype=np.int64), 4, lambda: None)


def test_compile_and_save_keywords_exist_in_the_real_wheel(wheel, built):
    (compile_call,) = recorded(built, "dynamo.compile")
    assert set(compile_call) <= named_parameters(wheel, DYNAMO_COMPILE), sorted(set(compile_call) -
                                                                               named_parameters(wheel, DYNAMO_COMPILE))
    for name, site in (("Input", INPUT), ("Device", DEVICE)):
        passed = {key for call in recorded(built, name) for key in call}
        assert passed and passed <= kwargs_read(wheel, site), (name, sorted(passed - kwargs_read(wheel, site)))
    (save,) = recorded(built, "save")
    assert set(save) - {"module", "file_path"} <= named_parameters(wheel, SAVE)
    assert save["output_format"] == "exported_program" and "dynamic_shapes" in save
    assert save_input_types(wheel) == ["torch.Tensor", "Input"]  # why the cache's position is a tensor input
    assert all(isinstance(arg, torch.Tensor) for arg in save["arg_inputs"])
    assert compile_call["device"].gpu_id == 1  # the configured device's index (cuda:1)


def test_the_compile_settings_are_tools_llms_as_2_14_names_them(wheel):
    """run_llm.py compile_torchtrt's keywords to torch_tensorrt.dynamo.compile, less ``debug`` (not a parameter
    in 2.14: **kwargs would swallow it) and ``use_python_runtime`` (2.14 warns it is deprecated and ignores it),
    with its values: use_fp32_acc only at FP16, min_block_size its --min_block_size default."""
    from trtbench.decoders.trt import compile_settings

    run_llm = tools_llm("run_llm.py")
    (call,) = calls_to(top_function(run_llm, "compile_torchtrt"), "torch_tensorrt.dynamo.compile")
    theirs = keywords(call)
    named = named_parameters(wheel, DYNAMO_COMPILE)
    assert "debug" in theirs and "debug" not in named
    assert "use_python_runtime" in theirs and any("`use_python_runtime` is deprecated" in s
                                                  for s in strings(function(wheel, DYNAMO_COMPILE)))
    (block,) = [c for c in calls_to(run_llm, "arg_parser.add_argument")
                if ast.unparse(c.args[0]) == "'--min_block_size'"]
    fake = fake_trt.make_fake()
    for precision in ("fp32", "fp16", "bf16"):
        ours = compile_settings(fake, precision, "cuda:0")
        assert set(ours) == set(theirs) - {"debug", "use_python_runtime", "inputs"} and set(ours) <= named
        assert ours["use_fp32_acc"] is (precision == "fp16")  # `if args.model_precision == "FP16": use_fp32_acc = True`
        for key in ("disable_tf32", "offload_module_to_cpu"):
            assert repr(ours[key]) == theirs[key]
        assert ours["min_block_size"] == ast.literal_eval(keywords(block)["default"])
    assert "use_fp32_acc = True" in ast.unparse(top_function(run_llm, "compile_torchtrt"))


def test_the_model_is_loaded_as_tools_llms_get_model_loads_it():
    (theirs,) = calls_to(top_function(tools_llm("run_llm.py"), "get_model"), "AutoModelForCausalLM.from_pretrained")
    (ours,) = calls_to(ast.parse(DECODER.read_text()), "AutoModelForCausalLM.from_pretrained")
    for key in ("use_cache", "attn_implementation"):
        assert keywords(ours)[key] == keywords(theirs)[key], key


# --- the port, against static_cache_v2.py and cache_utils.py ---------------------------------------

def test_the_cache_inputs_outputs_and_axis_are_static_cache_v2s():
    from trtbench.decoders.static_cache import CACHE_DIM

    v2 = tools_llm("static_cache_v2.py")
    added = {ast.unparse(c.args[1]) for c in calls_to(v2, "_add_graph_input")}
    assert added == {"key_value[0].name + '_k_input'", "key_value[1].name + '_v_input'", "'start_idx'", "'end_idx'"}
    assert {"_k_input", "_v_input"} <= strings(ast.parse(PORT.read_text()))  # the same names; no start/end inputs
    cats = [c for c in calls_to(v2, "gm.graph.create_node") if ast.unparse(c.args[1]) == "torch.ops.aten.cat.default"]
    assert cats and {ast.literal_eval(c.keywords[0].value.elts[1]) if c.keywords and c.keywords[0].arg == "args"
                     else None for c in cats} == {CACHE_DIM}
    add_kv = ast.unparse(top_function(v2, "add_kv_as_outputs"))
    assert "new_outputs = current_outputs + tuple(kv_cache_for_graph)" in add_kv
    assert "kv_cache_for_graph.extend([new_incoming_key_cache_node, new_incoming_value_cache_node])" in \
        ast.unparse(top_function(v2, "insert_kv_slicing_before_sdpa"))  # key then value, per attention call
    assigned = {ast.unparse(n) for n in ast.walk(top_function(tools_llm("cache_utils.py"), "get_kv_nodes"))
                if isinstance(n, ast.Assign)}
    assert "q_node, k_node, v_node = node.args[:3]" in assigned  # the key and value: attention's 2nd and 3rd


def test_every_op_the_rewrite_adds_has_a_converter_in_the_wheel_and_attention_reaches_it_whole(wheel):
    from trtbench.decoders.static_cache import ATTENTION

    added = {"aten.select.int", "aten.arange.start_step", "aten.le.Tensor", "aten.unsqueeze.default",
             "aten.index_copy.default", str(ATTENTION)}
    assert {f"torch.ops.{op}" for op in added} <= {  # what the port writes into the graph
        ast.unparse(n) for n in ast.walk(ast.parse(PORT.read_text())) if isinstance(n, ast.Attribute)}
    converters = {ast.unparse(d.args[0]).removeprefix("torch.ops.")
                  for node in ast.parse(wheel.read(CONVERTERS).decode()).body if isinstance(node, ast.FunctionDef)
                  for d in node.decorator_list if isinstance(d, ast.Call) and d.args
                  and ast.unparse(d.func).endswith("dynamo_tensorrt_converter")}
    assert added <= converters, sorted(added - converters)
    defaults = wheel.read("torch_tensorrt/dynamo/_defaults.py").decode()
    decompositions = wheel.read("torch_tensorrt/dynamo/lowering/_decompositions.py").decode()
    assert "DECOMPOSE_ATTENTION = False" in defaults
    assert "aten.scaled_dot_product_attention.default" in ast.unparse(next(
        n for n in ast.parse(decompositions).body if isinstance(n, ast.Assign)
        and ast.unparse(n.targets[0]) == "ATTENTION_DECOMPOSITION_OPS"))


def test_the_decoder_builds_and_runs_on_the_configured_device(built, monkeypatch):
    """Bug: the build hard-coded "cuda" (engines on the current GPU) while the session moved its inputs to the run's
    device, so with ``device: cuda:1`` the engines and the inputs sat on different GPUs. The fixture built for
    cuda:1 through the fake torch_tensorrt, whose Device holds the index as the real one does; a bare "cuda" is the
    current device, as the vision trt variant passes it."""
    from trtbench.core.target import Target
    from trtbench.decoders import get_decoder
    from trtbench.decoders.trt import compile_settings

    (compiled,) = recorded(built, "dynamo.compile")
    assert compiled["device"].gpu_id == 1 and built["asked"] == [("set_device", "cuda:1"), ("load", "cuda:1")]
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert compile_settings(built["fake"], "fp32", "cuda")["device"].gpu_id == 0
    asked = []
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: asked.append(str(device)))
    decoder = get_decoder("trt")
    session = decoder.load(built["artifact"], "cuda:1", 1)
    assert session.device == torch.device("cuda:1") and asked == ["cuda:1"]
    reason = decoder.unavailable_reason(Target(torch.device("cuda:1"), "fp32", "llama"))
    assert reason != "trt needs a CUDA GPU; device is cuda:1"


# --- where it cannot run ------------------------------------------------------------------------

def test_on_this_cpu_machine_a_generate_run_skips_trt_with_the_reason():
    from helpers.llm import generate_config
    from trtbench.config.config import config_from_dict
    from trtbench.config.plan import resolve

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    config = config_from_dict(generate_config(variants=["eager", "trt"], precisions=["fp32", "fp16", "int4"]))
    (group,) = resolve(config).groups
    assert group.unavailable["trt"] == group.unavailable["trt@fp16"] == "trt needs a CUDA GPU; device is cpu"
    assert group.unavailable["trt@int4"].startswith("trt has no int4 path")
    assert "eager" not in group.unavailable and "fp16 on CUDA only" in group.unavailable["eager@fp16"]


def test_without_cuda_or_torch_tensorrt_the_reason_says_what_is_missing(monkeypatch):
    from trtbench.core.target import Target
    from trtbench.decoders import get_decoder

    trt = get_decoder("trt")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert trt.unavailable_reason(Target(torch.device("cuda"), "fp32", "llama")) == \
        "CUDA is not available on this machine (Torch-TensorRT builds TensorRT engines for NVIDIA GPUs)"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setitem(__import__("sys").modules, "torch_tensorrt", None)  # an import of it raises ImportError
    reason = trt.unavailable_reason(Target(torch.device("cuda"), "fp16", "llama"))
    assert reason.startswith("torch_tensorrt is not installed") and "pip install torch-tensorrt==2.14.0" in reason
