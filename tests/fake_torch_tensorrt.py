"""FAKE torch_tensorrt 2.14.0 front-end, for tests only: it builds no TensorRT engine and never times one.

It enforces what the real 2.14.0 Python front-end enforces for every argument trtbench passes,
and runs the PyTorch parts of the real code paths for real (``torch.export`` re-export and
``torch.jit.trace`` in ``save``), so a call the real library rejects fails here too. Each rule
cites the file and function of the ``torch_tensorrt-2.14.0`` wheel it mirrors (paths relative
to its ``torch_tensorrt/`` package). ``tests/variants/test_trt_contract.py`` checks the signatures and
keyword names below against that wheel's sources.

The type rules the real sources state along the call path are tables here (``TS_DEVICE_READS``,
``TORCH_DTYPES``, ``TS_SETTING_TYPES``, ``fake.SAVE_INPUT_TYPES``), and ``tests/variants/test_trt_contract.py``
derives the same tables from the wheel's sources and requires them to be equal.

Deliberate differences: ``compile`` builds no engine: it hands back the model's PyTorch graph, which
runs on the CPU, with its outputs routed through a stand-in engine op, ``fake_tensorrt::execute_engine``
(a copy). The real compiled modules call ``tensorrt::execute_engine``, which ``import torch_tensorrt``
registers (``__init__.py`` ``torch.ops.load_library`` of libtorchtrt_runtime, or the Python runtime's
``torch.library.custom_op`` in ``dynamo/runtime/_TRTEngine.py``), so a saved module loads only after that
import; importing this module registers the stand-in, so the same holds for the fake's artifacts.
``Input``/``Device`` raise TypeError for a keyword the real ``__init__`` never reads (the real one
ignores it silently, which would hide a misspelt keyword); example tensors are made on the CPU, not
on ``torch.cuda.current_device()``. Every call is recorded in ``fake.calls`` before it is checked.
"""

from __future__ import annotations

import inspect
import operator
import types
import warnings
from collections import namedtuple
from typing import Any

import torch

VERSION = "2.14.0"

# ts/_compiler.py compile (line 104): warned on every call, stacklevel=2 (tests/variants/test_trt_contract.py reads it)
TS_FRONTEND_WARNING = (
    'The torchscript frontend for Torch-TensorRT has been deprecated, please plan on porting to the dynamo frontend '
    '(torch_tensorrt.compile(..., ir="dynamo"). Torchscript will continue to be a supported deployment format via '
    'post compilation torchscript tracing, see: https://pytorch.org/TensorRT/user_guide/saving_models.html for more '
    'details')

# ts/_Device.py TorchScriptDevice._from (lines 64-69): what it reads from the device the TorchScript
# frontend is given (ts/_compile_spec.py _parse_device hands it a torch.device too, lines 88-89).
TS_DEVICE_READS = ("gpu_id", "dla_core", "allow_gpu_fallback")
# _enums.py dtype._from, its torch.dtype branch: the torch dtypes Torch-TensorRT maps, and to what
# (any other torch dtype is a TypeError). Input(dtype=) goes through it (_Input.py, "dtype" in kwargs).
TORCH_DTYPES = {torch.uint8: "u8", torch.int8: "i8", torch.long: "i64", torch.int32: "i32",
                torch.float8_e4m3fn: "f8", torch.float4_e2m1fn_x2: "f4", torch.half: "f16", torch.float: "f32",
                torch.float64: "f64", torch.bool: "b", torch.bfloat16: "bf16"}
# ts/_compile_spec.py _parse_compile_spec and _parse_torch_fallback: the asserts on each setting, by
# the ts/_compiler.py compile parameter it comes from ("isinstance": isinstance(v, T); "type": type(v) is T).
TS_SETTING_TYPES = {
    "sparse_weights": ("isinstance", bool), "disable_tf32": ("isinstance", bool), "refit": ("isinstance", bool),
    "debug": ("isinstance", bool), "allow_shape_tensors": ("isinstance", bool),
    "num_avg_timing_iters": ("type", int), "workspace_size": ("type", int), "dla_sram_size": ("type", int),
    "dla_local_dram_size": ("type", int), "dla_global_dram_size": ("type", int),
    "truncate_long_and_double": ("type", bool), "min_block_size": ("isinstance", int),
    "torch_executed_ops": ("isinstance", list), "torch_executed_modules": ("isinstance", list),
}
ENGINE_OP = "fake_tensorrt::execute_engine"


@torch.library.custom_op(ENGINE_OP, mutates_args=())
def execute_engine(inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """FAKE stand-in for ``tensorrt::execute_engine``: its inputs, copied."""
    return [t.clone() for t in inputs]


@execute_engine.register_fake
def _execute_engine_shapes(inputs):
    return [torch.empty_like(t) for t in inputs]


class FakeEngine(torch.nn.Module):
    """Stands in for one TensorRT engine of a compiled module (a dynamo ``_run_on_acc_N`` segment)."""

    def forward(self, *tensors):
        return torch.ops.fake_tensorrt.execute_engine(list(tensors))


class _EngineOutputs(torch.nn.Module):
    """A TorchScript module's forward with its outputs passed through a FakeEngine (traced around it)."""

    def __init__(self, module):
        super().__init__()
        self.module, self.engine = module, FakeEngine()

    def forward(self, *inputs):
        out = self.module(*inputs)
        if isinstance(out, torch.Tensor):
            return self.engine(out)[0]
        return tuple(self.engine(*out))


def script_with_engine(module: torch.jit.ScriptModule, example_inputs: tuple) -> torch.jit.ScriptModule:
    """A ScriptModule running ``module`` with its outputs routed through the stand-in engine op (traced
    around it at ``example_inputs``; ``module`` stays a script call), so that loading it saved needs the op."""
    return torch.jit.trace(_EngineOutputs(module), example_inputs, check_trace=False)


def graph_with_engine(module: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``module`` with its outputs routed through a FakeEngine child named like the real partitioner's
    TensorRT segments (``_run_on_acc_0``), so that loading it saved needs the op."""
    graph = module.graph
    output = next(node for node in graph.nodes if node.op == "output")
    values = list(output.args[0])
    module.add_submodule("_run_on_acc_0", FakeEngine())
    with graph.inserting_before(output):
        engine = graph.call_module("_run_on_acc_0", tuple(values))
        output.args = (tuple(graph.call_function(operator.getitem, (engine, i)) for i in range(len(values))),)
    module.recompile()
    return module


# dynamo/_compiler.py compile: its parameters after ``exported_program``, in order (all
# keyword-only from ``arg_inputs`` on; a trailing **kwargs swallows unknown names silently).
DYNAMO_2_14 = (
    "inputs", "arg_inputs", "kwarg_inputs", "device", "disable_tf32", "assume_dynamic_shape_support",
    "sparse_weights", "engine_capability", "num_avg_timing_iters", "workspace_size", "dla_sram_size",
    "dla_local_dram_size", "dla_global_dram_size", "truncate_double", "use_complex_decomposition",
    "require_full_compilation", "min_block_size", "torch_executed_ops", "torch_executed_modules",
    "pass_through_build_failures", "max_aux_streams", "version_compatible", "optimization_level",
    "use_python_runtime", "use_fast_partitioner", "enable_experimental_decompositions", "dryrun",
    "hardware_compatible", "timing_cache_path", "lazy_engine_init", "cache_built_engines",
    "reuse_cached_engines", "engine_cache_dir", "engine_cache_size", "custom_engine_cache", "use_fp32_acc",
    "refit_identical_engine_weights", "strip_engine_weights", "immutable_weights", "enable_weight_streaming",
    "tiling_optimization_level", "l2_limit_for_tiling", "offload_module_to_cpu", "use_distributed_mode_trace",
    "enable_autocast", "autocast_low_precision_type", "autocast_excluded_nodes", "autocast_excluded_ops",
    "autocast_max_output_threshold", "autocast_max_depth_of_reduction", "autocast_calibration_dataloader",
    "cpu_memory_budget", "enable_resource_partitioning", "dynamically_allocate_resources",
    "decompose_attention", "disabled_constant_fold_exclusions", "attn_bias_is_causal",
    "fallback_data_dependent_ops")
# Older dynamo frontends still had weak-typing switches (for the precision-switch tests).
DYNAMO_WITH_EXPLICIT_TYPING = DYNAMO_2_14 + ("enabled_precisions", "use_explicit_typing")
DYNAMO_WITH_ENABLED_PRECISIONS = DYNAMO_2_14 + ("enabled_precisions",)

Features = namedtuple("Features", ["torchscript_frontend", "dynamo_frontend"])


def make_fake(version: str = VERSION, ts_frontend: bool = True, dynamo_params=DYNAMO_2_14):
    """A module object standing in for ``torch_tensorrt``; ``fake.calls`` records every call."""
    fake = types.ModuleType("torch_tensorrt")
    fake.__doc__ = __doc__
    fake.__version__ = version
    fake.ENABLED_FEATURES = Features(torchscript_frontend=ts_frontend, dynamo_frontend=True)
    fake.calls = []

    class Device:
        """_Device.py Device."""

        KWARGS = ("gpu_id", "dla_core", "allow_gpu_fallback", "device_type")  # what Device.__init__ reads
        gpu_id, dla_core, allow_gpu_fallback, device_type = -1, -1, False, "unknown"

        def __init__(self, *args: Any, **kwargs: Any):
            fake.calls.append(("Device", dict(kwargs)))
            _reject_unread(kwargs, self.KWARGS, "Device")
            if len(args) == 1:  # Device.__init__: a positional spec must be a str ("cuda:1", "dla:0")
                if not isinstance(args[0], str):
                    raise TypeError("When specifying Device through positional argument, argument must be str")
                kind, index = args[0].lower().split(":")  # Device._parse_device_str
                if kind not in ("gpu", "cuda", "dla"):
                    raise ValueError(f"Unknown device type {kind}")
                self.device_type = "dla" if kind == "dla" else "gpu"
                self.gpu_id, self.dla_core = (0, int(index)) if kind == "dla" else (int(index), -1)
            elif len(args) == 0:
                if "gpu_id" not in kwargs and "dla_core" not in kwargs:
                    raise ValueError("Either gpu_id or dla_core or both must be defined if no string with device "
                                     "specs is provided as an arg")
                self.dla_core = kwargs.get("dla_core", self.dla_core)
                self.gpu_id = kwargs.get("gpu_id", self.gpu_id)  # kept as given, None included
                self.device_type = "dla" if self.dla_core >= 0 else "gpu"
            else:
                raise ValueError(f"Unexpected number of positional arguments for class Device \n    Found {len(args)} "
                                 f"arguments, expected either zero or a single positional arguments")
            if "allow_gpu_fallback" in kwargs:
                if not isinstance(kwargs["allow_gpu_fallback"], bool):
                    raise TypeError("allow_gpu_fallback must be a bool")
                self.allow_gpu_fallback = kwargs["allow_gpu_fallback"]

        def __str__(self) -> str:
            return f"Device(type=DeviceType.GPU, gpu_id={self.gpu_id})"

        @classmethod
        def _from(cls, d):
            """Device._from: a torch.device must be "cuda" and keeps its index, None included."""
            if isinstance(d, Device):
                return d
            if isinstance(d, torch.device):
                if d.type != "cuda":
                    raise ValueError('Torch Device specs must have type "cuda"')
                return cls(gpu_id=d.index)
            if d is None:
                return cls(gpu_id=torch.cuda.current_device())
            return cls(d)

    class Input:
        """_Input.py Input."""

        KWARGS = ("profiles", "shape", "shape_ranges", "min_shape", "opt_shape", "max_shape", "shared_dims",
                  "dtype", "is_shape_tensor", "format", "tensor_domain", "torch_tensor", "name")
        STATIC, DYNAMIC = "static", "dynamic"  # Input._ShapeMode
        name = ""

        def __init__(self, *args: Any, **kwargs: Any):
            fake.calls.append(("Input", dict(kwargs)))
            self.kwargs = kwargs
            _reject_unread(kwargs, self.KWARGS, "Input")
            shape_keys = ("min_shape", "opt_shape", "max_shape")
            if len(args) > 1:
                raise ValueError(f"Unexpected number of positional arguments for class Input \n    Found {len(args)} "
                                 f"arguments, expected either zero or a single positional arguments")
            if args and any(k in kwargs for k in shape_keys):
                raise ValueError("Found that both shape (as a positional argument), and one or more of min_shape, "
                                 "opt_shape, max_shape were specified")
            if not args and "shape" not in kwargs and not all(k in kwargs for k in shape_keys):
                raise ValueError("Missing required arguments for class Input\nEither shape or all three of min_shape, "
                                 "opt_shape, max_shape must be defined")
            if "shape" in kwargs and all(k in kwargs for k in shape_keys):
                raise ValueError("Found that both shape, and one or more of min_shape, opt_shape, max_shape were "
                                 "specified")
            if args or "shape" in kwargs:
                self.shape = tuple(_size(args[0] if args else kwargs["shape"], "shape"))
                self.shape_mode = Input.STATIC
            else:
                self.shape = {k: tuple(_size(kwargs[k], k)) for k in shape_keys}
                self.shape_mode = Input.DYNAMIC
            dtype = kwargs.get("dtype", torch.float32)
            if not isinstance(dtype, torch.dtype):  # _enums.py dtype._from also takes numpy and TensorRT dtypes
                raise TypeError(f"FAKE: only torch dtypes are faked (trtbench passes them), got: {dtype}")
            if dtype not in TORCH_DTYPES:
                raise TypeError(f"Provided an unsupported data type as a data type for translation (support: bool, "
                                f"int, long, half, float, bfloat16), got: {dtype}")
            self.dtype = dtype
            self.name = kwargs.get("name", "")

        def example_tensor(self, optimization_profile_field=None) -> torch.Tensor:
            """Input.example_tensor (on the CPU here)."""
            if self.shape_mode == Input.DYNAMIC and optimization_profile_field is None:
                raise ValueError("Requested an example tensor from a dynamic shaped input but did not specific "
                                 "which profile field to use.")
            shape = self.shape if self.shape_mode == Input.STATIC else self.shape[optimization_profile_field]
            return torch.rand(shape).to(self.dtype)

    def compile(module: Any, ir: str = "default", inputs=None, arg_inputs=None, kwarg_inputs=None,
                enabled_precisions=None, **kwargs: Any):
        """_compile.py compile: picks the frontend, then hands ``kwargs`` to it unchanged."""
        named = {"inputs": inputs, "arg_inputs": arg_inputs, "kwarg_inputs": kwarg_inputs,
                 "enabled_precisions": enabled_precisions}
        fake.calls.append(("compile", {"module": module, "ir": ir, **{k: v for k, v in named.items() if v is not None},
                                       **kwargs}))
        module_type = _module_type(module)
        target = _target_frontend(module_type, ir, fake.ENABLED_FEATURES)
        input_list = inputs if inputs is not None else []
        if target == "ts":
            ts_module = torch.jit.script(module) if module_type == "nn" else module
            assert all(isinstance(i, (torch.Tensor, Input)) for i in input_list)  # _non_fx_input_interface
            return fake.ts.compile(ts_module, inputs=input_list,
                                   enabled_precisions=enabled_precisions if enabled_precisions is not None
                                   else {torch.float32}, **kwargs)
        if arg_inputs is None and inputs is None and not kwarg_inputs:
            raise AssertionError("'arg_inputs' and 'inputs' should not both be None.")
        if arg_inputs is not None and inputs is not None:
            raise AssertionError("'arg_inputs' and 'inputs' should not be used at the same time.")
        if module_type != "ep":
            raise NotImplementedError("FAKE: dynamo_trace of an nn.Module is not faked; trtbench passes an "
                                      "ExportedProgram")
        return fake.dynamo.compile(module, arg_inputs=inputs if inputs is not None else arg_inputs, **kwargs)

    def dynamo_compile(exported_program, inputs=None, **kwargs):
        """dynamo/_compiler.py compile (its full signature is set below)."""
        settings = _bind(dynamo_compile, exported_program, inputs, kwargs)
        fake.calls.append(("dynamo.compile", kwargs))
        if "truncate_long_and_double" in kwargs and settings.get("truncate_double"):
            raise ValueError('Provided configuration for "truncate_double" and deprecated API '
                             '"truncate_long_and_double", please only use "truncate_double"')
        if all(settings.get(key) is None for key in ("inputs", "arg_inputs", "kwarg_inputs")):
            raise AssertionError("'arg_inputs', 'kwarg_inputs' and 'inputs' should not all be None.")
        device = Device._from(settings.get("device"))  # dynamo/utils.py to_torch_tensorrt_device
        # dynamo/runtime/_TorchTensorRTModule.py _resolve_target_device, run for every engine built:
        torch.device(f"cuda:{device.gpu_id}")  # gpu_id None -> RuntimeError: Invalid device string: 'cuda:None'
        return graph_with_engine(exported_program.module())

    params = [inspect.Parameter("exported_program", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("inputs", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
               for n in dynamo_params if n != "inputs"]
    params.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    dynamo_compile.__signature__ = inspect.Signature(params)

    def ts_compile(module, inputs=None, input_signature=None, device=None, disable_tf32=False,
                   sparse_weights=False, enabled_precisions=None, refit=False, debug=False, capability=None,
                   num_avg_timing_iters=1, workspace_size=0, dla_sram_size=1048576,
                   dla_local_dram_size=1073741824, dla_global_dram_size=536870912, truncate_long_and_double=False,
                   require_full_compilation=False, min_block_size=3, torch_executed_ops=None,
                   torch_executed_modules=None, allow_shape_tensors=False):
        """ts/_compiler.py compile: no **kwargs, so an unknown setting is a TypeError."""
        fake.calls.append(("ts.compile", _arguments(ts_compile, locals(), skip=("module",))))
        warnings.warn(TS_FRONTEND_WARNING, DeprecationWarning, stacklevel=2)
        if isinstance(module, torch.jit.ScriptFunction):
            raise TypeError("torch.jit.ScriptFunction currently is not directly supported, wrap the function in a "
                            "module to compile")
        if require_full_compilation and (torch_executed_modules or torch_executed_ops):
            raise ValueError("require_full_compilation is enabled however the list of modules and ops to run in "
                             "torch is not empty.")
        # ts/_compile_spec.py _parse_compile_spec
        input_list = list(inputs or [])
        if not input_list and input_signature is None:
            raise KeyError('Module input definitions are required to compile module. Provide a list of '
                           'torch_tensorrt.Input keyed to "inputs" in the compile spec')
        if not all(isinstance(i, (torch.Tensor, Input)) for i in input_list):
            raise KeyError(f"Input specs should be either torch_tensorrt.Input or torch.Tensor, found types: "
                           f"{[type(i) for i in input_list]}")
        settings = _arguments(ts_compile, locals(), skip=("module",))
        for name, (check, kind) in TS_SETTING_TYPES.items():  # None lists become [] (ts/_compiler.py compile)
            value = [] if settings[name] is None and kind is list else settings[name]
            assert (isinstance(value, kind) if check == "isinstance" else type(value) is kind), (name, value)
        _ts_parse_device(Device._current_device() if device is None else device)
        for precision in enabled_precisions or ():  # _parse_enabled_precisions: dtype._from of each
            if precision not in TORCH_DTYPES:
                raise TypeError(f"Provided an unsupported data type as a data type for translation, got: {precision}")
        examples = tuple(i if isinstance(i, torch.Tensor) else
                         i.example_tensor(None if i.shape_mode == Input.STATIC else "opt_shape") for i in input_list)
        return script_with_engine(module, examples)

    def _ts_parse_device(device_info):
        """ts/_compile_spec.py _parse_device; a torch.device goes to ts/_Device.py TorchScriptDevice._from,
        which reads ``.gpu_id``: AttributeError for every torch.device."""
        if isinstance(device_info, dict):
            if "device_type" not in device_info:
                raise KeyError("Device type is required parameter")
            return device_info
        if isinstance(device_info, (Device, torch.device)):  # both through TorchScriptDevice._from
            return tuple(getattr(device_info, name) for name in TS_DEVICE_READS)
        raise ValueError("Unsupported data for device specification. Expected either a dict, "
                         "torch_tensorrt.Device or torch.Device")

    Device._current_device = classmethod(lambda cls: cls(gpu_id=torch.cuda.current_device()))

    def save(module: Any, file_path: str = "", *, extra_files=None, output_format="exported_program", inputs=None,
             arg_inputs=None, kwarg_inputs=None, retrace=True, use_legacy_exporter=None, pickle_protocol=2,
             dynamic_shapes=None, **kwargs: Any) -> None:
        """_compile.py save, for the module types trtbench saves (a dynamo GraphModule, a ScriptModule)."""
        fake.calls.append(("save", {k: v for k, v in _arguments(save, locals(), skip=("kwargs",)).items()
                                    if v is not None} | kwargs))
        module_type = _module_type(module)
        if arg_inputs is not None and not all(isinstance(i, fake.SAVE_INPUT_TYPES) for i in arg_inputs):
            raise ValueError("Not all inputs provided are torch.Tensor or torch_tensorrt.Input objects. Please "
                             "provide inputs of a valid type")
        if arg_inputs is not None and inputs is not None:
            raise AssertionError("'arg_inputs' and 'inputs' should not be used at the same time.")
        arg_inputs = inputs if inputs is not None else arg_inputs
        kwarg_inputs = kwarg_inputs or {}
        if output_format not in ("exported_program", "torchscript", "aot_inductor", "executorch"):
            raise ValueError(f"Provided output_format {output_format} is not supported. Supported options are "
                             f"exported_program | torchscript | aot_inductor | executorch")
        if output_format in ("aot_inductor", "executorch"):
            raise NotImplementedError(f"FAKE: output_format={output_format!r} is not faked")
        if not file_path:
            raise ValueError("File path cannot be empty. Please provide a valid file path")
        if module_type == "nn":
            raise ValueError("Input model is of type nn.Module. Saving nn.Module directly is not supported.")
        if module_type == "ts":
            if output_format != "torchscript":
                raise ValueError("Provided model is a torch.jit.ScriptModule but the output_format specified is "
                                 "not torchscript. Other output formats are not supported")
            torch.jit.save(module, file_path, _extra_files=extra_files)
            return
        if module_type == "ep":
            if output_format == "torchscript":
                raise ValueError("Provided model is a torch.export.ExportedProgram but the output_format specified "
                                 "is torchscript. Please verify the output_format")
            torch.export.save(module, file_path)
            return
        # A torch.fx.GraphModule (what the dynamo frontend returns).
        all_input_objects = arg_inputs is not None and all(isinstance(i, Input) for i in arg_inputs)
        if all_input_objects:
            if dynamic_shapes is None:  # dynamo/_tracer.py get_dynamic_shapes_args / get_dynamic_shapes
                dynamic_shapes = _inferred_dynamic_shapes(module, arg_inputs)
            # dynamo/utils.py get_torch_inputs -> get_torch_tensor: Input.example_tensor at opt
            arg_tensors = tuple(i.example_tensor(None if i.shape_mode == Input.STATIC else "opt_shape")
                                for i in arg_inputs)
        else:  # mixed or all tensors: _extract_tensor calls example_tensor() with no field (dynamic: ValueError)
            arg_tensors = tuple(i.example_tensor() if isinstance(i, Input) else i for i in (arg_inputs or ()))
        if output_format == "torchscript":
            torch.jit.save(torch.jit.trace(module, arg_inputs, example_kwarg_inputs=kwarg_inputs), file_path,
                           _extra_files=extra_files)
            return
        if not retrace:
            raise NotImplementedError("FAKE: retrace=False (the legacy exporter) is not faked")
        # retrace=True: dynamo/_exporter.py export (symbolic metadata + dynamic_shapes) or torch.export.export,
        # both a torch.export.export of the graph with these dynamic_shapes.
        if not arg_tensors and not kwarg_inputs:
            raise ValueError("Provided model is a torch.fx.GraphModule without existing shape metadata and retrace "
                             "is True, however no inputs specs were provided.")
        program = torch.export.export(module, args=arg_tensors, kwargs=kwarg_inputs, dynamic_shapes=dynamic_shapes,
                                      strict=False)
        torch.export.save(program, file_path, pickle_protocol=pickle_protocol)

    def _inferred_dynamic_shapes(module, arg_inputs) -> dict:
        """dynamo/_tracer.py get_dynamic_shapes_args: keyed by forward's parameter names; every dynamic dim
        of an Input becomes ``Dim(input.name + "_" + str(dim))``, so unnamed inputs all get "_0", "_1"..."""
        names = list(inspect.signature(module.forward).parameters)
        shapes = {}
        for inp, name in zip(arg_inputs, names):
            dims = {}
            if inp.shape_mode == Input.DYNAMIC:
                lo, opt, hi = (inp.shape[k] for k in ("min_shape", "opt_shape", "max_shape"))
                for d in range(len(lo)):
                    if not lo[d] == opt[d] == hi[d]:
                        dims[d] = torch.export.Dim(inp.name + "_" + str(d), min=lo[d], max=hi[d])
            shapes[name] = dims
        return shapes

    fake.Device, fake.Input, fake.compile, fake.save = Device, Input, compile, save
    fake.SAVE_INPUT_TYPES = (torch.Tensor, Input)  # _compile.py save: what arg_inputs may hold
    fake.dynamo = types.SimpleNamespace(compile=dynamo_compile)
    if ts_frontend:
        fake.ts = types.SimpleNamespace(compile=ts_compile)
    return fake


def _arguments(fn, frame: dict, skip: tuple) -> dict:
    """The parameters of ``fn`` (not its closure's names) from its ``locals()``."""
    return {name: frame[name] for name in inspect.signature(fn).parameters if name not in skip}


def _reject_unread(kwargs: dict, known: tuple, cls: str) -> None:
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise TypeError(f"FAKE: torch_tensorrt.{cls}.__init__ never reads {unknown} (2.14.0 ignores it silently)")


def _size(value, key: str):
    """_Input.py Input._supported_input_size_type: a list, tuple or torch.Size."""
    if not isinstance(value, (list, tuple, torch.Size)):
        raise TypeError(f"Input shape specifications for inputs are required to be a List, tuple or torch.Size, "
                        f"found type: {type(value)} for {key}")
    return value


def _module_type(module) -> str:
    """_compile.py _parse_module_type."""
    if isinstance(module, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return "ts"
    if isinstance(module, torch.fx.GraphModule):
        return "fx"
    if isinstance(module, torch.export.ExportedProgram):
        return "ep"
    if isinstance(module, torch.nn.Module):
        return "nn"
    raise RuntimeError("Module is an unknown format")


def _target_frontend(module_type: str, ir: str, features) -> str:
    """_compile.py _get_target_fe (the ts and dynamo routes)."""
    if module_type in ("nn", "ts") and ir in ("torchscript", "ts"):
        if not features.torchscript_frontend:
            raise ValueError("Requested using the TS frontend but the TS frontend is not available in this build of "
                             "Torch-TensorRT")
        return "ts"
    if module_type in ("nn", "fx", "ep") and ir == "dynamo":
        return "dynamo"
    if ir == "default":
        raise NotImplementedError("FAKE: ir='default' is not faked; trtbench always names the ir")
    raise ValueError("Unknown ir was requested")


def _bind(fn, exported_program, inputs, kwargs) -> dict:
    """The named settings of a call (what the real function would see as its parameters)."""
    bound = inspect.signature(fn).bind(exported_program, inputs, **kwargs)
    return {k: v for k, v in bound.arguments.items() if k != "kwargs"}


def calls_named(fake, name: str) -> list[dict]:
    return [kwargs for call, kwargs in fake.calls if call == name]
