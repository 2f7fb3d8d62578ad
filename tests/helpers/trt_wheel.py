"""The real torch-tensorrt 2.14.0 wheel, read, never imported (TensorRT's native libraries cannot be installed
here): fetched once with ``pip download`` (pinned by sha256) into ``.cache/``, its Python sources parsed with
``ast``; the sites along trtbench's call paths, and what their signatures name and their bodies read.
tests/variants/test_trt_contract.py and the contract tests beside it hold trtbench's calls against them."""

from __future__ import annotations

import ast
import zipfile

import pytest

from pinned_wheel import CACHE_ROOT, open_pinned_wheel

VERSION = "2.14.0"
WHEEL = f"torch_tensorrt-{VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl"  # the .py files are the same in every build
SHA256 = "12756addfacb326d0ff99aa9f35c1534954d73afaea8492472d95b389101d707"
CACHE = CACHE_ROOT / f"torch-tensorrt-{VERSION}"

# (file in the wheel, function or Class.method)
COMPILE = ("torch_tensorrt/_compile.py", "compile")
SAVE = ("torch_tensorrt/_compile.py", "save")
DYNAMO_COMPILE = ("torch_tensorrt/dynamo/_compiler.py", "compile")
TS_COMPILE = ("torch_tensorrt/ts/_compiler.py", "compile")
INPUT = ("torch_tensorrt/_Input.py", "Input.__init__")
DEVICE = ("torch_tensorrt/_Device.py", "Device.__init__")
# along the call paths
TS_COMPILE_SPEC = ("torch_tensorrt/ts/_compile_spec.py", "_parse_compile_spec")
TS_FALLBACK = ("torch_tensorrt/ts/_compile_spec.py", "_parse_torch_fallback")
TS_PARSE_DEVICE = ("torch_tensorrt/ts/_compile_spec.py", "_parse_device")
TS_DEVICE_FROM = ("torch_tensorrt/ts/_Device.py", "TorchScriptDevice._from")
TO_TRT_DEVICE = ("torch_tensorrt/dynamo/utils.py", "to_torch_tensorrt_device")
DEVICE_FROM = ("torch_tensorrt/_Device.py", "Device._from")
RESOLVE_TARGET = ("torch_tensorrt/dynamo/runtime/_TorchTensorRTModule.py", "TorchTensorRTModule._resolve_target_device")
DTYPE_FROM = ("torch_tensorrt/_enums.py", "dtype._from")


@pytest.fixture(scope="module")
def wheel() -> zipfile.ZipFile:
    with open_pinned_wheel(f"torch-tensorrt=={VERSION}", WHEEL, SHA256, CACHE,
                           ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")) as archive:
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



def warnings_raised(wheel, where) -> list[tuple[str, str]]:
    """(category, message) of every ``warnings.warn`` call in a function of the wheel whose message is a string
    constant."""
    return [(ast.unparse(node.args[1]), node.args[0].value) for node in ast.walk(function(wheel, where))
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "warnings.warn"
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)]


def save_input_types(wheel) -> list[str]:
    """The types _compile.py save accepts in ``arg_inputs`` (its ``all(isinstance(i, (...)) for i in
    arg_inputs)`` check), as written."""
    for node in ast.walk(function(wheel, SAVE)):
        if isinstance(node, ast.GeneratorExp) and ast.unparse(node.generators[0].iter) == "arg_inputs" \
                and isinstance(node.elt, ast.Call) and ast.unparse(node.elt.func) == "isinstance":
            kinds = node.elt.args[1]
            return [ast.unparse(k) for k in (kinds.elts if isinstance(kinds, ast.Tuple) else [kinds])]
    raise AssertionError("save() no longer checks arg_inputs with isinstance; re-read _compile.py")

