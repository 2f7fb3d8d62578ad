"""The precision a call's kernels ran, read from each runtime (trtbench.measure.kernels): the readers on fakes of what
each runtime reports (oneDNN's verbose lines, OpenVINO's runtime model, ONNX Runtime's profile events), held against
the real libraries; the verdict on a row's precision; and the faults it must flag."""

from __future__ import annotations

import pytest
import torch

from trtbench.core.env import bf16_compute
from trtbench.measure.kernels import KernelProof, KeptNodes, onednn_lines, read_onednn, read_openvino, read_ort

NATIVE_BF16 = bf16_compute("cpu").mode == "native"

# oneDNN verbose lines as oneDNN 3.x prints them (docs/performance_considerations/verbose.md): seen on an AMD Zen 4
# (avx512_core_bf16, fp32 with bf16 math allowed) and, for AMX, in the form an Intel Sapphire Rapids prints
F32_CONV = ("onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx512_core,forward_training,src:f32:a:blocked:"
            "aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef::: dst:f32:a:blocked:aBcd16b::f0,"
            "attr-scratchpad:user,alg:convolution_direct,mb2_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1,2.28")
BF32_CONV = F32_CONV.replace("attr-scratchpad:user,", "attr-scratchpad:user attr-fpmath:bf16,")
AMX_BF32_CONV = BF32_CONV.replace("jit:avx512_core,", "brg_conv_fwd:avx512_core_amx,")
BF16_CONV = ("onednn_verbose,v1,primitive,exec,cpu,convolution,jit_bf16:avx512_core_bf16,forward_training,src:bf16:a:"
             "blocked:aBcd16b::f0 wei:bf16:a:blocked:ABcd16b16a2b::f0 bia:undef::undef::: dst:bf16:a:blocked:aBcd16b:"
             ":f0,attr-scratchpad:user,alg:convolution_direct,mb2_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1,1.1")
EMULATED_BF16_CONV = BF16_CONV.replace("jit_bf16:avx512_core_bf16", "jit:avx512_core")
BF16_MATMUL = ("onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_bf16,undef,src:bf16::blocked:ab::f0 "
               "wei:bf16:a:blocked:BA16a64b2a::f0 dst:bf16::blocked:ab::f0,attr-scratchpad:user,,2x512:512x1000,0.1")
INT8_CONV = ("onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx512_core_vnni,forward_inference,"
             "src:u8:a:blocked:acdb::f0 wei:s8:a:blocked:AcdB16a4b::f0 dst:u8:a:blocked:acdb::f0,"
             "attr-scratchpad:user,alg:convolution_direct,mb2_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1,0.5")
REORDER = ("onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:"
           "Acdb16a::f0,attr-scratchpad:user,,64x3x7x7,0.01")


class FakeAny:
    """A fake of openvino's ``OVAny`` as rt_info values are: ``astype(str)`` gives the text."""

    def __init__(self, text: str):
        self.text = text

    def astype(self, kind):
        assert kind is str
        return self.text


class FakeRuntimeNode:
    def __init__(self, layer: str, precision: str, primitive: str, original: str):
        self.info = {"layerType": FakeAny(layer), "runtimePrecision": FakeAny(precision),
                     "primitiveType": FakeAny(primitive), "originalLayersNames": FakeAny(original)}

    def get_rt_info(self):
        return self.info


class FakeRuntimeModel:
    """A fake of ``CompiledModel.get_runtime_model()``: each executed node's rt_info keys as OpenVINO 2026.4's CPU
    plugin sets them (layerType, runtimePrecision, primitiveType, originalLayersNames; src/plugins/intel_cpu/src/
    exec_graph... held against the real one in test_the_openvino_reader_reads_a_real_runtime_model)."""

    def __init__(self, nodes):
        self.nodes = [FakeRuntimeNode(*node) for node in nodes]

    def get_ops(self):
        return self.nodes


def test_onednn_lines_give_each_convs_and_matmuls_precision_and_isa():
    proof = read_onednn([REORDER, BF16_CONV, BF16_CONV, BF16_MATMUL, "not a verbose line"])
    assert proof.shares("conv") == {"bf16": 1.0} and proof.shares("matmul") == {"bf16": 1.0}
    assert proof.text == "conv bf16 100% (avx512_core_bf16); matmul bf16 100% (avx512_core_bf16)"
    assert proof.contradiction("bf16", native_bf16=True) is None
    assert read_onednn([INT8_CONV]).shares("conv") == {"i8": 1.0}


def test_an_fp32_row_allowed_bf16_math_is_flagged_and_amx_computes_it_in_bf16():
    allowed = read_onednn([BF32_CONV])
    assert allowed.shares("conv") == {"f32": 1.0}  # no bf16 units under the kernel: it computed f32
    assert "allowed bf16 math" in allowed.contradiction("fp32", native_bf16=True)
    on_amx = read_onednn([AMX_BF32_CONV])
    assert on_amx.shares("conv") == {"bf16": 1.0}
    assert "an fp32 row whose kernels ran bf16" in on_amx.contradiction("fp32", native_bf16=True)
    assert read_onednn([F32_CONV]).contradiction("fp32", native_bf16=True) is None


def test_a_native_bf16_row_that_ran_fp32_or_emulated_kernels_is_flagged():
    assert "ran no bf16 kernel" in read_onednn([F32_CONV]).contradiction("bf16", native_bf16=True)
    emulated = read_onednn([EMULATED_BF16_CONV])
    assert "without bf16 units" in emulated.contradiction("bf16", native_bf16=True)
    assert emulated.contradiction("bf16", native_bf16=False) is None  # said emulated: it is
    assert "ran no i8 kernel" in read_onednn([F32_CONV]).contradiction("int8", native_bf16=False)


def test_no_conv_or_matmul_read_is_no_verdict():
    proof = read_onednn([REORDER])
    assert proof.groups == () and proof.contradiction("fp32", native_bf16=True) is None
    assert proof.text == "no conv or matmul kernel in the oneDNN verbose"


def test_openvinos_runtime_model_gives_precisions_and_whether_the_kept_nodes_ran_f32():
    runtime = FakeRuntimeModel([("Convolution", "bf16", "brgconv_avx512_bf16", "node_conv2d,node_relu"),
                                ("Convolution", "f32", "brgconv_avx512_f32", "node_conv2d_3,node_add_2"),
                                ("FullyConnected", "bf16", "brgemm_avx512_bf16", "node_linear"),
                                ("Reorder", "f32", "jit_uni_f32", "")])
    proof = read_openvino(runtime, frozenset({"node_conv2d_3"}))
    assert proof.shares("conv") == {"bf16": 0.5, "f32": 0.5} and proof.kept == KeptNodes(1, 1)
    assert proof.contradiction("bf16", native_bf16=True) is None
    missed = read_openvino(runtime, frozenset({"node_conv2d", "node_conv2d_3"}))
    assert missed.kept == KeptNodes(2, 1) and "1 of them ran bf16" in missed.contradiction("bf16", native_bf16=True)
    unhinted = FakeRuntimeModel([("Convolution", "bf16", "brgconv_avx512_bf16", "node_conv2d")])
    assert "kernels ran bf16" in read_openvino(unhinted).contradiction("fp32", native_bf16=True)


def test_ort_profile_events_give_float_and_quantized_nodes():
    def node(op, types):
        return {"cat": "Node", "name": f"{op}_kernel_time", "args": {"op_name": op, "provider": "CPUExecutionProvider",
                                                                      "input_type_shape": [{t: [1]} for t in types]}}

    fp32 = read_ort([node("Conv", ["float", "float"]), node("Gemm", ["float"]), node("Relu", ["float"]),
                     {"cat": "Session", "name": "model_run"}])
    assert fp32.shares("conv") == {"f32": 1.0} and fp32.shares("matmul") == {"f32": 1.0}
    int8 = read_ort([node("QLinearConv", ["uint8", "float"]), node("MatMulInteger", ["uint8", "int8"])])
    assert int8.shares("conv") == {"i8": 1.0} and int8.contradiction("int8", native_bf16=False) is None
    assert "ran no i8 kernel" in fp32.contradiction("int8", native_bf16=False)


def test_a_proof_round_trips_through_json():
    proof = read_openvino(FakeRuntimeModel([("Convolution", "f32", "brgconv_avx512_f32", "a")]), frozenset({"a"}))
    assert KernelProof.from_dict(proof.to_dict()) == proof


# ---- held against the real libraries ----

def _conv_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(16 * 8 * 8, 10)).eval()


def test_the_onednn_reader_reads_torchs_own_verbose_lines(capfd):
    net, x = _conv_net(), torch.randn(2, 8, 8, 8)
    with torch.inference_mode():
        net(x)
        lines = onednn_lines(lambda: net(x))
    proof = read_onednn(lines)
    assert proof.shares("conv") == {"f32": 1.0} and proof.contradiction("fp32", native_bf16=NATIVE_BF16) is None
    assert "onednn_verbose" not in capfd.readouterr().out  # captured, not printed
    with torch.inference_mode():
        bf16 = net.to(torch.bfloat16)
        proof = read_onednn(onednn_lines(lambda: bf16(x.to(torch.bfloat16))))
    if NATIVE_BF16:  # oneDNN's native bf16 ISAs (without the units torch may convolve bf16 outside oneDNN)
        assert proof.shares("conv") == {"bf16": 1.0} and proof.contradiction("bf16", native_bf16=True) is None
    else:
        assert set(proof.shares("conv")) <= {"bf16"} and proof.contradiction("bf16", native_bf16=False) is None


def test_an_fp32_run_with_bf16_math_allowed_by_torch_is_flagged():
    net, x = _conv_net(), torch.randn(2, 8, 8, 8)
    conv = torch.backends.mkldnn.conv
    before = conv.fp32_precision
    conv.fp32_precision = "bf16"  # what a user's script or ONEDNN_DEFAULT_FPMATH_MODE=BF16 would leave set
    try:
        with torch.inference_mode():
            proof = read_onednn(onednn_lines(lambda: net(x)))
    finally:
        conv.fp32_precision = before
    assert proof.contradiction("fp32", native_bf16=NATIVE_BF16) is not None


def test_the_openvino_reader_reads_a_real_runtime_model(tmp_path):
    ov = pytest.importorskip("openvino")
    net, x = _conv_net(), torch.randn(2, 8, 8, 8)
    path = tmp_path / "net.onnx"
    torch.onnx.export(net, (x,), str(path), dynamo=True, verbose=False)
    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    compiled(x.numpy())
    proof = read_openvino(compiled.get_runtime_model())
    assert proof.shares("conv") == {"f32": 1.0} and proof.shares("matmul") == {"f32": 1.0}
    assert proof.contradiction("fp32", native_bf16=NATIVE_BF16) is None


def test_openvino_without_the_f32_hint_is_flagged_where_the_cpu_has_bf16_units(tmp_path):
    ov = pytest.importorskip("openvino")
    if "BF16" not in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        pytest.skip("this CPU has no bf16 units (neither AVX512-BF16 nor AMX-BF16): OpenVINO's default is f32 "
                    "here; test_openvinos_runtime_model_gives_precisions... holds the verdict on a fake")
    net, x = _conv_net(), torch.randn(2, 8, 8, 8)
    path = tmp_path / "net.onnx"
    torch.onnx.export(net, (x,), str(path), dynamo=True, verbose=False)
    compiled = ov.Core().compile_model(str(path), "CPU")  # no hint: OpenVINO's default precision
    compiled(x.numpy())
    assert "kernels ran bf16" in read_openvino(compiled.get_runtime_model()).contradiction("fp32", native_bf16=True)


def test_the_ort_reader_reads_a_real_profile(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from trtbench.variants.ort_common import OrtRunner

    net, x = _conv_net(), torch.randn(2, 8, 8, 8)
    path = tmp_path / "net.onnx"
    torch.onnx.export(net, (x,), str(path), dynamo=True, verbose=False)
    runner = OrtRunner(ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]), torch.device("cpu"), path)
    proof = runner.profile(runner.prepare((x,)))
    assert proof.shares("conv") == {"f32": 1.0} and proof.shares("matmul") == {"f32": 1.0}
    assert not list(tmp_path.glob("*.json"))  # its profile file went with its folder
