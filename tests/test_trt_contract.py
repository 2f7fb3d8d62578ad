"""Contract with the real torch-tensorrt 2.14.0 wheel: every keyword trtbench passes exists in its
front-end, and the fake (tests/fake_torch_tensorrt.py) has the real signatures.

The wheel is fetched once with ``pip download`` (pinned by sha256) into ``.cache/`` and its Python
sources are read from the zip and parsed with ``ast``, never imported: TensorRT's native libraries
cannot be installed here. Without the package registry these tests fail; they never skip.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import fake_torch_tensorrt as fake_trt
from test_trt_variants import Net, dynamic_spec, install_fake, static_spec, context
from trtbench.variants import Built, get_variant
from trtbench.variants.trt_common import DynamoOptions, TorchScriptOptions

VERSION = "2.14.0"
WHEEL = f"torch_tensorrt-{VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl"  # the .py files are the same in every build
SHA256 = "12756addfacb326d0ff99aa9f35c1534954d73afaea8492472d95b389101d707"
CACHE = Path(__file__).resolve().parents[1] / ".cache" / f"torch-tensorrt-{VERSION}"

# (file in the wheel, function or Class.method)
COMPILE = ("torch_tensorrt/_compile.py", "compile")
SAVE = ("torch_tensorrt/_compile.py", "save")
DYNAMO_COMPILE = ("torch_tensorrt/dynamo/_compiler.py", "compile")
TS_COMPILE = ("torch_tensorrt/ts/_compiler.py", "compile")
INPUT = ("torch_tensorrt/_Input.py", "Input.__init__")
DEVICE = ("torch_tensorrt/_Device.py", "Device.__init__")


@pytest.fixture(scope="module")
def wheel() -> zipfile.ZipFile:
    path = CACHE / WHEEL
    if not path.is_file():
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
                               f"torch-tensorrt=={VERSION}", "--dest", str(CACHE)], capture_output=True, text=True)
        if not path.is_file():
            pytest.fail(f"could not download {WHEEL} (pip exited {done.returncode}); this test needs the package "
                        f"registry (PyPI):\n{done.stdout[-1000:]}{done.stderr[-2000:]}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHA256:
        pytest.fail(f"{path} has sha256 {digest}, not the {SHA256} this contract was checked against; delete it "
                    f"and run again")
    with zipfile.ZipFile(path) as archive:
        yield archive


def function(wheel: zipfile.ZipFile, where: tuple[str, str]) -> ast.FunctionDef:
    """The definition of ``Class.method`` or ``function`` at the top level of a source file of the wheel."""
    file, qualname = where
    body = ast.parse(wheel.read(file).decode()).body
    *owner, name = qualname.split(".")
    if owner:
        body = next(node for node in body if isinstance(node, ast.ClassDef) and node.name == owner[0]).body
    return next(node for node in body if isinstance(node, ast.FunctionDef) and node.name == name)


def real_signature(wheel, where) -> list[tuple[str, str]]:
    """(name, kind) of every parameter, kinds named as in inspect.Parameter."""
    args = function(wheel, where).args
    params = [(a.arg, "POSITIONAL_ONLY") for a in args.posonlyargs]
    params += [(a.arg, "POSITIONAL_OR_KEYWORD") for a in args.args]
    params += [(args.vararg.arg, "VAR_POSITIONAL")] if args.vararg else []
    params += [(a.arg, "KEYWORD_ONLY") for a in args.kwonlyargs]
    params += [(args.kwarg.arg, "VAR_KEYWORD")] if args.kwarg else []
    return params


def named_parameters(wheel, where) -> set[str]:
    return {name for name, kind in real_signature(wheel, where) if not kind.startswith("VAR_")}


def kwargs_read(wheel, where) -> set[str]:
    """Keys a ``(*args, **kwargs)`` function reads: kwargs["k"], "k" in kwargs, kwargs.get("k"),
    and the names listed in ``all(k in kwargs for k in [...])``."""
    keys = set()
    for node in ast.walk(function(wheel, where)):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "kwargs":
            keys.add(node.slice)
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In) and \
                isinstance(node.comparators[0], ast.Name) and node.comparators[0].id == "kwargs":
            keys.add(node.left)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "kwargs":
            keys.add(node.args[0])
        elif isinstance(node, ast.comprehension) and isinstance(node.iter, (ast.List, ast.Tuple)):
            keys.update(node.iter.elts)
    return {k.value for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def fake_signature(fn) -> list[tuple[str, str]]:
    return [(p.name, p.kind.name) for p in inspect.signature(fn).parameters.values()]


@pytest.fixture
def fake(monkeypatch):
    return install_fake(monkeypatch)


@pytest.fixture
def trtbench_calls(fake, tmp_path) -> dict[str, list[dict]]:
    """Every call trtbench makes into torch_tensorrt: both frontends, every option set, both saves."""
    options = dict(optimization_level=3, min_block_size=2, workspace_size=1 << 20, truncate_double=True,
                   torch_executed_ops=["torch.ops.aten.relu.default"], allow_tf32=False)
    model = Net().eval()
    for dtype in (torch.float32, torch.float16):
        variant = get_variant("trt")
        built = variant.build(model.to(dtype), context(dynamic_spec(), DynamoOptions(**options), dtype))
        variant.save(built, tmp_path, f"trt_{dtype}")
        script = torch.jit.trace(model, (torch.randn(2, 3, 8, 8).to(dtype),))
        ts_options = TorchScriptOptions(**{**options, "optimization_level": None, "torch_executed_ops": ["aten::relu"]})
        variant = get_variant("trt_traced")
        built = variant.build(model, context(static_spec(), ts_options, dtype, built={"traced": Built(script)}))
        variant.save(built, tmp_path, f"trt_traced_{dtype}")
    calls: dict[str, list[dict]] = {}
    for name, kwargs in fake.calls:
        calls.setdefault(name, []).append(kwargs)
    return calls


@pytest.mark.parametrize("where, fake_function", [
    (COMPILE, lambda f: f.compile), (SAVE, lambda f: f.save), (DYNAMO_COMPILE, lambda f: f.dynamo.compile),
    (TS_COMPILE, lambda f: f.ts.compile), (INPUT, lambda f: f.Input.__init__), (DEVICE, lambda f: f.Device.__init__),
])
def test_the_fake_has_the_real_signatures(wheel, where, fake_function):
    assert fake_signature(fake_function(fake_trt.make_fake())) == real_signature(wheel, where)


@pytest.mark.parametrize("where, cls", [(INPUT, "Input"), (DEVICE, "Device")])
def test_the_fake_knows_the_keywords_the_real_classes_read(wheel, where, cls):
    assert set(getattr(fake_trt.make_fake(), cls).KWARGS) == kwargs_read(wheel, where)


def test_compile_keywords_exist_in_the_real_front_end(wheel, trtbench_calls):
    own = named_parameters(wheel, COMPILE) - {"module"}
    frontends = {"dynamo": named_parameters(wheel, DYNAMO_COMPILE), "ts": named_parameters(wheel, TS_COMPILE)}
    calls = trtbench_calls["compile"]
    assert {call["ir"] for call in calls} == {"dynamo", "ts"}
    for call in calls:
        passed = set(call) - {"module"}
        # compile() keeps its own parameters and hands the rest (**kwargs) to the frontend's compile.
        assert passed - own <= frontends[call["ir"]], (call["ir"], sorted(passed - own - frontends[call["ir"]]))


def test_the_settings_reach_named_parameters_of_the_frontends(wheel, trtbench_calls):
    """dynamo.compile swallows unknown names (**kwargs); every setting must be one of its named parameters."""
    dynamo = named_parameters(wheel, DYNAMO_COMPILE)
    for call in trtbench_calls["dynamo.compile"]:
        assert set(call) <= dynamo, sorted(set(call) - dynamo)
    assert {"device", "disable_tf32", "optimization_level", "truncate_double"} <= set(call)
    ts = named_parameters(wheel, TS_COMPILE)
    for call in trtbench_calls["ts.compile"]:
        assert set(call) <= ts
        assert call["truncate_long_and_double"] is True and call["torch_executed_ops"] == ["aten::relu"]


@pytest.mark.parametrize("name, where", [("Input", INPUT), ("Device", DEVICE)])
def test_input_and_device_keywords_exist(wheel, trtbench_calls, name, where):
    passed = {key for call in trtbench_calls[name] for key in call}
    assert passed and passed <= kwargs_read(wheel, where), sorted(passed - kwargs_read(wheel, where))


def test_save_keywords_exist(wheel, trtbench_calls):
    calls = trtbench_calls["save"]
    assert {c["output_format"] for c in calls} == {"torchscript", "exported_program"}
    named = named_parameters(wheel, SAVE)
    for call in calls:
        assert set(call) <= named, sorted(set(call) - named)
    assert any("dynamic_shapes" in c for c in calls)
