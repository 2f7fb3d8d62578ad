"""FAKE of torch_tensorrt for testing config->API translation only; never used to claim a TRT timing.

It builds no TensorRT engine. It records the calls trtbench makes (``compile``, ``Input``,
``save``) and exposes compile-function signatures shaped like real releases, so tests can
check how configs, precisions and options translate into Torch-TensorRT arguments.
``compile`` hands back a plain PyTorch module (the ExportedProgram's ``.module()`` or the
ScriptModule it was given), which runs on the CPU without any TensorRT.
"""

from __future__ import annotations

import inspect
import types
from collections import namedtuple

# Keyword parameters of the real compile functions in torch_tensorrt 2.14.0 (the subset
# trtbench may pass), as read from the PyPI wheel.
DYNAMO_2_14 = ("inputs", "arg_inputs", "kwarg_inputs", "device", "disable_tf32", "workspace_size",
               "truncate_double", "require_full_compilation", "min_block_size", "torch_executed_ops",
               "optimization_level")
TS_2_14 = ("inputs", "input_signature", "device", "disable_tf32", "sparse_weights", "enabled_precisions",
           "refit", "debug", "capability", "num_avg_timing_iters", "workspace_size", "truncate_long_and_double",
           "require_full_compilation", "min_block_size", "torch_executed_ops", "torch_executed_modules",
           "allow_shape_tensors")
# Older dynamo frontends still had weak-typing switches.
DYNAMO_WITH_EXPLICIT_TYPING = DYNAMO_2_14 + ("enabled_precisions", "use_explicit_typing")
DYNAMO_WITH_ENABLED_PRECISIONS = DYNAMO_2_14 + ("enabled_precisions",)

Features = namedtuple("Features", ["torchscript_frontend", "dynamo_frontend"])


def _signature_only(first: str, names, var_keyword: bool):
    def compile_function(*args, **kwargs):
        raise AssertionError("the fake exposes this signature only; trtbench calls torch_tensorrt.compile")

    params = [inspect.Parameter(first, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None) for n in names]
    if var_keyword:
        params.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    compile_function.__signature__ = inspect.Signature(params)
    return compile_function


def make_fake(version: str = "2.14.0", ts_frontend: bool = True, dynamo_params=DYNAMO_2_14):
    """A module object standing in for ``torch_tensorrt``; its ``calls`` list records every call."""
    fake = types.ModuleType("torch_tensorrt")
    fake.__doc__ = __doc__
    fake.__version__ = version
    fake.ENABLED_FEATURES = Features(torchscript_frontend=ts_frontend, dynamo_frontend=True)
    fake.calls = []

    class Input:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            fake.calls.append(("Input", kwargs))

    def compile(module, ir="default", inputs=None, **kwargs):
        fake.calls.append(("compile", {"module": module, "ir": ir, "inputs": inputs, **kwargs}))
        return module.module() if ir == "dynamo" else module

    def save(module, file_path="", *, output_format="exported_program", inputs=None, **kwargs):
        fake.calls.append(("save", {"module": module, "file_path": file_path, "output_format": output_format,
                                    "inputs": inputs, **kwargs}))

    fake.Input, fake.compile, fake.save = Input, compile, save
    fake.dynamo = types.SimpleNamespace(compile=_signature_only("exported_program", dynamo_params, var_keyword=True))
    if ts_frontend:
        fake.ts = types.SimpleNamespace(compile=_signature_only("module", TS_2_14, var_keyword=False))
    return fake


def calls_named(fake, name: str) -> list[dict]:
    return [kwargs for call, kwargs in fake.calls if call == name]
