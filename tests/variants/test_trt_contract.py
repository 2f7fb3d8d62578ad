"""Contract with the real torch-tensorrt 2.14.0 wheel: every keyword trtbench passes exists in its
front-end, every value trtbench passes has the type the real code along the whole call path needs,
and the fake (tests/fake_torch_tensorrt.py) has the real signatures and the real type rules.

The wheel is fetched once with ``pip download`` (pinned by sha256) into ``.cache/`` and its Python
sources are read from the zip and parsed with ``ast``, never imported: TensorRT's native libraries
cannot be installed here. Without the package registry these tests fail; they never skip.

The type rules are derived from those sources here (not copied): what ``TorchScriptDevice._from``
reads from a device, what ``Device._from`` keeps of a ``torch.device`` and how the runtime turns it
into a CUDA device, which torch dtypes ``dtype._from`` maps and to what, the asserts the TorchScript
frontend's spec parser makes, and what ``save`` accepts as inputs. trtbench's calls, recorded
through the fake by the ``builds`` fixture, are judged by those derived rules, and the fake's own
rule tables must equal them.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

import pytest
import torch

import fake_torch_tensorrt as fake_trt
from helpers.fakes import CUDA0, Net, context, dynamic_spec, install_fake, static_spec
from helpers.trt_wheel import (COMPILE, DEVICE, DEVICE_FROM, DTYPE_FROM, DYNAMO_COMPILE, INPUT, RESOLVE_TARGET, SAVE,  # noqa: F401
                               TO_TRT_DEVICE, TS_COMPILE, TS_COMPILE_SPEC, TS_DEVICE_FROM, TS_FALLBACK, TS_PARSE_DEVICE,
                               function, kwargs_read, named_parameters, real_signature, save_input_types,
                               warnings_raised, wheel)
from trtbench.variants import Built, get_variant
from trtbench.variants.trt_common import DynamoOptions, TorchScriptOptions


def fake_signature(fn) -> list[tuple[str, str]]:
    return [(p.name, p.kind.name) for p in inspect.signature(fn).parameters.values()]


# --- rules derived from the sources ----------------------------------------------------------

def where(wheel, site) -> str:
    """``file:line`` of a function in the wheel, for messages."""
    return f"{site[0].removeprefix('torch_tensorrt/')}:{function(wheel, site).lineno}"


def calls_made(fn: ast.AST) -> set[str]:
    """The callees of every call in ``fn``, as written (``Device._from``, ``torch.device``...)."""
    return {ast.unparse(node.func) for node in ast.walk(fn) if isinstance(node, ast.Call)}


def isinstance_branches(fn: ast.FunctionDef, name: str) -> list[tuple[str, ast.If]]:
    """The ``if/elif isinstance(name, T)`` chain at the top of ``fn``: (T as written, its branch)."""
    branches = []
    for node in fn.body:
        while isinstance(node, ast.If):
            test = node.test
            if isinstance(test, ast.Call) and ast.unparse(test.func) == "isinstance" and \
                    ast.unparse(test.args[0]) == name:
                branches.append((ast.unparse(test.args[1]), node))
            node = node.orelse[0] if len(node.orelse) == 1 else None
    return branches


def branch_calls(branch: ast.If) -> set[str]:
    return {callee for stmt in branch.body for callee in calls_made(stmt)}


def attributes_read(fn: ast.FunctionDef, name: str) -> set[str]:
    """Attributes ``fn`` reads from the variable ``name``."""
    return {node.attr for node in ast.walk(fn)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name}


def ts_device_rule(wheel) -> tuple[list[str], set[str]]:
    """(types ts/_compile_spec.py _parse_device hands to TorchScriptDevice._from, what that reads)."""
    routed = [kind for kind, branch in isinstance_branches(function(wheel, TS_PARSE_DEVICE), "device_info")
              if "TorchScriptDevice._from" in branch_calls(branch)]
    from_ = function(wheel, TS_DEVICE_FROM)
    return routed, attributes_read(from_, from_.args.args[1].arg)


def torch_device_gpu_id(wheel) -> str:
    """What _Device.py Device._from passes as ``gpu_id`` for a torch.device (as written)."""
    (branch,) = [b for kind, b in isinstance_branches(function(wheel, DEVICE_FROM), "d") if kind == "torch.device"]
    (keyword,) = [k for stmt in branch.body for node in ast.walk(stmt) if isinstance(node, ast.Call)
                  for k in node.keywords if k.arg == "gpu_id"]
    return ast.unparse(keyword.value)


def runtime_device_strings(wheel) -> list[str]:
    """The f-strings _resolve_target_device builds its torch.device from."""
    return [ast.unparse(node) for node in ast.walk(function(wheel, RESOLVE_TARGET)) if isinstance(node, ast.JoinedStr)]


def dtype_map(wheel) -> dict[torch.dtype, str]:
    """_enums.py dtype._from, its ``isinstance(t, torch.dtype)`` branch: torch dtype -> Torch-TensorRT dtype."""
    (branch,) = [b for kind, b in isinstance_branches(function(wheel, DTYPE_FROM), "t") if kind == "torch.dtype"]
    mapping, node = {}, branch.body[0]
    while isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
        (result,) = [stmt for stmt in node.body if isinstance(stmt, ast.Return)]
        torch_name = ast.unparse(node.test.comparators[0]).removeprefix("torch.")
        mapping[getattr(torch, torch_name)] = ast.unparse(result.value).removeprefix("dtype.")
        node = node.orelse[0] if node.orelse else None
    return mapping


def spec_asserts(fn: ast.FunctionDef) -> dict[str, tuple[str, str]]:
    """``assert isinstance(spec["k"], T)`` and ``assert type(spec["k"]) is T`` in ``fn``: k -> (check, T)."""
    rules = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assert):
            continue
        test = node.test
        if isinstance(test, ast.Call) and ast.unparse(test.func) == "isinstance" and \
                isinstance(test.args[0], ast.Subscript):
            rules[test.args[0].slice.value] = ("isinstance", ast.unparse(test.args[1]))
        elif isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Is) and isinstance(test.left, ast.Call) \
                and ast.unparse(test.left.func) == "type":
            rules[test.left.args[0].slice.value] = ("type", ast.unparse(test.comparators[0]))
    return rules


def spec_sources(wheel) -> dict[str, str]:
    """ts/_compiler.py compile's ``spec`` dict: spec key -> the compile parameter its value comes from
    (directly, through a nested dict, or through ``x_list = x if x is not None else []``)."""
    fn = function(wheel, TS_COMPILE)
    params = {a.arg for a in fn.args.args}
    derived = {t.id: node.value.body.id for node in ast.walk(fn) if isinstance(node, ast.Assign)
               for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.IfExp)
               and isinstance(node.value.body, ast.Name)}
    (spec,) = [node.value for node in ast.walk(fn) if isinstance(node, ast.Assign)
               and [ast.unparse(t) for t in node.targets] == ["spec"]]
    sources = {}

    def visit(mapping: ast.Dict) -> None:
        for key, value in zip(mapping.keys, mapping.values):
            if isinstance(value, ast.Dict):
                visit(value)
            elif isinstance(value, ast.Name):
                name = derived.get(value.id, value.id)
                if name in params:
                    sources[key.value] = name
    visit(spec)
    return sources


def ts_setting_rules(wheel) -> dict[str, tuple[str, str]]:
    """ts.compile parameter -> (check, type name) the spec parser asserts on its value."""
    asserts = spec_asserts(function(wheel, TS_COMPILE_SPEC)) | spec_asserts(function(wheel, TS_FALLBACK))
    return {param: asserts[key] for key, param in spec_sources(wheel).items() if key in asserts}


def passes(check: str, kind: str, value) -> bool:
    expected = {"bool": bool, "int": int, "list": list}[kind]
    return isinstance(value, expected) if check == "isinstance" else type(value) is expected


# --- everything trtbench passes to torch_tensorrt, through the fake ----------------------------

@dataclass
class Build:
    """One build (and save) of a TRT variant through the fake: the calls it made, and its error if any."""

    variant: str
    dtype: torch.dtype
    dynamic: bool
    calls: list[tuple[str, dict]]
    error: BaseException | None

    def named(self, name: str) -> list[dict]:
        return [kwargs for call, kwargs in self.calls if call == name]

    @property
    def frontend(self) -> str:
        return "dynamo" if self.variant == "trt" else "ts"


OPTIONS = dict(optimization_level=3, min_block_size=2, workspace_size=1 << 20, truncate_double=True,
               torch_executed_ops=["torch.ops.aten.relu.default"], allow_tf32=False)
TS_OPTIONS = dict(OPTIONS, optimization_level=None, torch_executed_ops=["aten::relu"])
BUILDS = [("trt", True), ("trt_traced", False), ("trt_traced", True), ("trt_scripted", False), ("trt_scripted", True)]


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> list[Build]:
    """Every way trtbench calls torch_tensorrt: the dynamo frontend (trt) and the TorchScript frontend
    on traced and scripted modules, with static and dynamic shapes, at fp32 and fp16, with every option
    set, and each one's save. A build the fake rejects is kept with its error, so that the rules below
    still judge the calls it made (test_every_build_passes_the_fake fails on the error itself)."""
    out = tmp_path_factory.mktemp("trt_contract")
    done = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        fake = install_fake(monkeypatch)
        for dtype in (torch.float32, torch.float16):
            for name, dynamic in BUILDS:
                spec = dynamic_spec() if dynamic else static_spec()
                model = Net().eval().to(dtype)
                first = len(fake.calls)
                try:
                    if name == "trt":
                        ctx = context(spec, DynamoOptions(**OPTIONS), dtype)
                    else:
                        example = torch.randn(spec.opt_shape).to(dtype)
                        parent = torch.jit.trace(model, (example,)) if name == "trt_traced" else torch.jit.script(model)
                        built = {name.removeprefix("trt_"): Built(parent)}
                        ctx = context(spec, TorchScriptOptions(**TS_OPTIONS), dtype, built=built)
                    variant = get_variant(name)
                    variant.save(variant.build(model, ctx), out, f"{name}_{dynamic}_{dtype}".replace(".", "_"))
                    error = None
                except Exception as err:  # judged below, by the rules and by test_every_build_passes_the_fake
                    error = err
                done.append(Build(name, dtype, dynamic, list(fake.calls[first:]), error))
    return done


def calls_named(builds: list[Build], name: str) -> list[dict]:
    return [kwargs for build in builds for kwargs in build.named(name)]


def test_every_build_passes_the_fake(builds):
    failed = {f"{b.variant} {'dynamic' if b.dynamic else 'static'} {b.dtype}": repr(b.error) for b in builds if b.error}
    assert not failed


def test_the_builds_cover_both_frontends_with_static_and_dynamic_shapes(builds):
    assert {(b.variant, b.dynamic, b.dtype) for b in builds} == {
        (name, dynamic, dtype) for name, dynamic in BUILDS for dtype in (torch.float32, torch.float16)}
    spec = dynamic_spec()
    for build in builds:
        (inp,) = build.named("Input")
        if build.dynamic:  # what the TS frontend's spec parser reads of a dynamic Input (_compile_spec.py)
            assert (inp["min_shape"], inp["opt_shape"], inp["max_shape"]) == (
                tuple(spec.min_shape), tuple(spec.opt_shape), tuple(spec.max_shape)), build.variant
        else:
            assert "shape" in inp and "min_shape" not in inp
        assert build.named("ts.compile" if build.frontend == "ts" else "dynamo.compile"), build.variant


# --- signatures and keywords ---------------------------------------------------------------------

@pytest.mark.parametrize("site, fake_function", [
    (COMPILE, lambda f: f.compile), (SAVE, lambda f: f.save), (DYNAMO_COMPILE, lambda f: f.dynamo.compile),
    (TS_COMPILE, lambda f: f.ts.compile), (INPUT, lambda f: f.Input.__init__), (DEVICE, lambda f: f.Device.__init__),
])
def test_the_fake_has_the_real_signatures(wheel, site, fake_function):
    assert fake_signature(fake_function(fake_trt.make_fake())) == real_signature(wheel, site)


@pytest.mark.parametrize("site, cls", [(INPUT, "Input"), (DEVICE, "Device")])
def test_the_fake_knows_the_keywords_the_real_classes_read(wheel, site, cls):
    assert set(getattr(fake_trt.make_fake(), cls).KWARGS) == kwargs_read(wheel, site)


def test_compile_keywords_exist_in_the_real_front_end(wheel, builds):
    own = named_parameters(wheel, COMPILE) - {"module"}
    frontends = {"dynamo": named_parameters(wheel, DYNAMO_COMPILE), "ts": named_parameters(wheel, TS_COMPILE)}
    calls = calls_named(builds, "compile")
    assert {call["ir"] for call in calls} == {"dynamo", "ts"}
    for call in calls:
        passed = set(call) - {"module"}
        # compile() keeps its own parameters and hands the rest (**kwargs) to the frontend's compile.
        assert passed - own <= frontends[call["ir"]], (call["ir"], sorted(passed - own - frontends[call["ir"]]))


def test_the_settings_reach_named_parameters_of_the_frontends(wheel, builds):
    """dynamo.compile swallows unknown names (**kwargs); every setting must be one of its named parameters."""
    dynamo = named_parameters(wheel, DYNAMO_COMPILE)
    calls = calls_named(builds, "dynamo.compile")
    for call in calls:
        assert set(call) <= dynamo, sorted(set(call) - dynamo)
        assert {"device", "disable_tf32", "optimization_level", "truncate_double"} <= set(call)
    ts = named_parameters(wheel, TS_COMPILE)
    for call in calls_named(builds, "ts.compile"):
        assert set(call) <= ts
        assert call["truncate_long_and_double"] is True and call["torch_executed_ops"] == ["aten::relu"]


@pytest.mark.parametrize("name, site", [("Input", INPUT), ("Device", DEVICE)])
def test_input_and_device_keywords_exist(wheel, builds, name, site):
    passed = {key for call in calls_named(builds, name) for key in call}
    assert passed and passed <= kwargs_read(wheel, site), sorted(passed - kwargs_read(wheel, site))


def test_save_keywords_exist(wheel, builds):
    calls = calls_named(builds, "save")
    assert {c["output_format"] for c in calls} == {"torchscript", "exported_program"}
    named = named_parameters(wheel, SAVE)
    for call in calls:
        assert set(call) <= named, sorted(set(call) - named)
    assert any("dynamic_shapes" in c for c in calls)


# --- types along the call path: trtbench's calls, judged by the rules derived from the sources -----

def test_the_ts_frontend_gets_a_device_that_torchscriptdevice_can_read(wheel, builds):
    """ts/_compile_spec.py _parse_device accepts a torch.device (as it does a Device) and hands it to
    ts/_Device.py TorchScriptDevice._from, which reads .gpu_id and the rest: a torch.device has none."""
    routed, reads = ts_device_rule(wheel)
    assert "torch.device" in routed and "Device" in routed  # the first gate lets both through
    assert reads == {"gpu_id", "dla_core", "allow_gpu_fallback"}
    for build in (b for b in builds if b.frontend == "ts"):
        (call,) = build.named("ts.compile")
        device = call["device"]
        missing = sorted(name for name in reads if not hasattr(device, name))
        assert not missing, (f"{build.variant}: ts.compile got device {device!r} ({type(device).__name__}), which "
                             f"lacks {missing}; {where(wheel, TS_DEVICE_FROM)} reads them (reached from "
                             f"{where(wheel, TS_PARSE_DEVICE)})")
        assert type(device.gpu_id) is int


def test_the_dynamo_frontend_gets_a_device_with_a_gpu_index(wheel, builds):
    """dynamo/_compiler.py compile -> dynamo/utils.py to_torch_tensorrt_device -> _Device.py Device._from,
    which keeps a torch.device's .index as gpu_id; the runtime then targets f"cuda:{gpu_id}"."""
    assert "to_torch_tensorrt_device" in calls_made(function(wheel, DYNAMO_COMPILE))
    assert "Device._from" in calls_made(function(wheel, TO_TRT_DEVICE))
    assert torch_device_gpu_id(wheel) == "d.index"
    assert "f'cuda:{self.settings.device.gpu_id}'" in runtime_device_strings(wheel)
    for call in calls_named(builds, "dynamo.compile"):
        device = call["device"]
        gpu_id = device.index if isinstance(device, torch.device) else device.gpu_id
        assert type(gpu_id) is int, (f"dynamo.compile got device {device!r}: gpu_id {gpu_id!r} becomes "
                                     f"'cuda:{gpu_id}' in {where(wheel, RESOLVE_TARGET)}")


def test_input_dtypes_are_the_build_precision(wheel, builds):
    """_Input.py: Input(dtype=) is dtype._from(dtype) (_enums.py); TensorRT 11 networks are strongly typed,
    so the engine's inputs take it: an fp16 build passes fp16, an fp32 build fp32."""
    mapping = dtype_map(wheel)
    assert "self.dtype = dtype._from(kwargs['dtype'])" in {ast.unparse(n) for n in ast.walk(function(wheel, INPUT))}
    expected = {torch.float32: "f32", torch.float16: "f16"}
    for build in builds:
        (inp,) = build.named("Input")
        assert inp["dtype"] in mapping, f"{inp['dtype']} is not a dtype {where(wheel, DTYPE_FROM)} maps"
        assert mapping[inp["dtype"]] == expected[build.dtype], (
            f"{build.variant} built at {build.dtype} gave Input(dtype={inp['dtype']}), which Torch-TensorRT "
            f"reads as {mapping[inp['dtype']]}, not {expected[build.dtype]}")


def test_ts_enabled_precisions_are_the_build_precision(wheel, builds):
    """The TorchScript frontend still chooses kernels by enabled_precisions (ts/_compile_spec.py
    _parse_enabled_precisions, dtype._from of each); compile() defaults it to {torch.float32}."""
    mapping = dtype_map(wheel)
    expected = {torch.float32: {"f32"}, torch.float16: {"f16"}}
    for build in (b for b in builds if b.frontend == "ts"):
        (call,) = build.named("ts.compile")
        assert {mapping[p] for p in call["enabled_precisions"]} == expected[build.dtype], build.variant


def test_ts_settings_have_the_types_the_real_spec_parser_asserts(wheel, builds):
    rules = ts_setting_rules(wheel)
    assert {"workspace_size", "truncate_long_and_double", "min_block_size", "torch_executed_ops"} <= set(rules)
    for call in calls_named(builds, "ts.compile"):
        for name, (check, kind) in rules.items():
            value = [] if call[name] is None and kind == "list" else call[name]
            assert passes(check, kind, value), f"ts.compile {name}={value!r} fails {check} {kind}"


def test_saves_get_inputs_of_the_types_and_dtypes_the_engine_takes(wheel, builds):
    kinds = save_input_types(wheel)
    assert kinds == ["torch.Tensor", "Input"]
    for build in (b for b in builds if b.named("save")):
        (inp,) = build.named("Input")
        for call in build.named("save"):
            assert all(isinstance(arg, torch.Tensor) for arg in call["arg_inputs"]), build.variant
            dtypes = [arg.dtype for arg in call["arg_inputs"]]
            assert dtypes == [inp["dtype"]], f"{build.variant} built for {inp['dtype']} saved with {dtypes}"


# --- the fake's rule tables are the ones derived from the sources ----------------------------------

def test_the_fake_reads_what_torchscriptdevice_reads_and_fails_on_a_torch_device(wheel):
    _, reads = ts_device_rule(wheel)
    assert set(fake_trt.TS_DEVICE_READS) == reads
    fake = fake_trt.make_fake()
    script = torch.jit.trace(Net().eval(), (torch.randn(2, 3, 8, 8),))
    with pytest.raises(AttributeError, match="gpu_id"):
        fake.ts.compile(script, inputs=[fake.Input(shape=(2, 3, 8, 8))], device=CUDA0)
    fake.ts.compile(script, inputs=[fake.Input(shape=(2, 3, 8, 8))], device=fake.Device(gpu_id=0))


def test_the_fake_keeps_a_torch_devices_index_as_the_real_device_from_does(wheel):
    assert torch_device_gpu_id(wheel) == "d.index"
    fake = fake_trt.make_fake()
    assert fake.Device._from(torch.device("cuda")).gpu_id is None and fake.Device._from(CUDA0).gpu_id == 0


def test_the_fake_maps_the_torch_dtypes_the_real_dtype_from_maps(wheel):
    assert fake_trt.TORCH_DTYPES == dtype_map(wheel)
    with pytest.raises(TypeError, match="unsupported data type"):
        fake_trt.make_fake().Input(shape=(2, 3), dtype=torch.complex64)


def test_the_fake_asserts_the_ts_setting_types_the_real_spec_parser_asserts(wheel):
    assert {name: (check, kind.__name__) for name, (check, kind) in fake_trt.TS_SETTING_TYPES.items()} == \
        ts_setting_rules(wheel)
    fake = fake_trt.make_fake()
    script = torch.jit.trace(Net().eval(), (torch.randn(2, 3, 8, 8),))
    with pytest.raises(AssertionError, match="workspace_size"):  # type(True) is not int
        fake.ts.compile(script, inputs=[fake.Input(shape=(2, 3, 8, 8))], device=fake.Device(gpu_id=0),
                        workspace_size=True)


def test_the_fake_save_accepts_the_input_types_the_real_save_accepts(wheel):
    fake = fake_trt.make_fake()
    names = {torch.Tensor: "torch.Tensor", fake.Input: "Input"}
    assert [names[kind] for kind in fake.SAVE_INPUT_TYPES] == save_input_types(wheel)


def test_the_torchscript_frontend_warns_its_deprecation_as_the_fake_does_and_trtbench_says_it(wheel):
    """ts/_compiler.py compile warns on every call; trtbench turns that warning into the row's note."""
    import warnings

    from trtbench.variants.trt_common import TS_FRONTEND_DEPRECATION

    assert warnings_raised(wheel, TS_COMPILE) == [("DeprecationWarning", fake_trt.TS_FRONTEND_WARNING)], \
        where(wheel, TS_COMPILE)
    warned = warnings.WarningMessage(fake_trt.TS_FRONTEND_WARNING, DeprecationWarning, "_compile.py", 272)
    assert TS_FRONTEND_DEPRECATION.says(warned)
