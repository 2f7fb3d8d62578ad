"""The precision a call's conv and matmul kernels ran, as its runtime says (why: docs/backends.md)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator, Optional

import torch

from trtbench.core.codec import Coded

CONV, MATMUL = "conv", "matmul"
ONEDNN_KINDS = {"convolution": CONV, "deconvolution": CONV, "matmul": MATMUL, "inner_product": MATMUL}
OPENVINO_KINDS = {"Convolution": CONV, "GroupConvolution": CONV, "Deconvolution": CONV, "FullyConnected": MATMUL,
                  "MatMul": MATMUL}
ORT_KINDS = {"Conv": CONV, "FusedConv": CONV, "NhwcFusedConv": CONV, "QLinearConv": CONV, "ConvInteger": CONV,
             "Gemm": MATMUL, "MatMul": MATMUL, "FusedMatMul": MATMUL, "FusedGemm": MATMUL, "QGemm": MATMUL,
             "QLinearMatMul": MATMUL, "MatMulInteger": MATMUL, "MatMulIntegerToFloat": MATMUL,
             "DynamicQuantizeMatMul": MATMUL}
# a kernel's data type, as each runtime spells it, by the precision word of a row
PRECISION_OF = {"f32": "f32", "float": "f32", "float32": "f32", "bf16": "bf16", "bfloat16": "bf16", "f16": "f16",
                "float16": "f16", "u8": "i8", "s8": "i8", "i8": "i8", "uint8": "i8", "int8": "i8"}
LABEL_KERNELS = {"fp32": "f32", "bf16": "bf16", "fp16": "f16", "int8": "i8"}  # what a row's kernels should run
REDUCED_UNITS = ("bf16", "amx", "vnni", "int8")  # words in an ISA name that say it used reduced-precision units


@dataclass(frozen=True)
class KernelGroup:
    """Kernels of one kind (``conv`` or ``matmul``) that ran at one precision on one implementation."""

    op: str
    precision: str  # f32, bf16, f16 or i8
    isa: str  # the implementation as the runtime names it (oneDNN's ISA, OpenVINO's primitive type)
    count: int
    fpmath: str = ""  # oneDNN: a reduced math mode an f32 kernel was allowed (bf16, tf32); "" for strict f32

    @property
    def computes(self) -> str:
        """The precision it computed in: its data type, or its fpmath where an f32 kernel ran on reduced units."""
        if self.precision == "f32" and self.fpmath and _reduced_unit(self.isa):
            return self.fpmath
        return self.precision


@dataclass(frozen=True)
class KeptNodes:
    """The convolution and matmul nodes an fp32 fallback keeps: how many were found, and how many ran f32."""

    marked: int
    ran_f32: int


@dataclass(frozen=True)
class KernelProof(Coded):
    """The precision of a call's convolution and matmul kernels as its runtime reports it, from ``source``."""

    WRITTEN_AFTER: ClassVar[dict] = {"source": ("text",)}

    source: str
    groups: tuple[KernelGroup, ...]
    kept: Optional[KeptNodes] = None

    def shares(self, op: str) -> dict[str, float]:
        """Each precision's share of the ``op`` kernels that ran (by what they computed in)."""
        counts = Counter(group.computes for group in self.groups if group.op == op for _ in range(group.count))
        total = sum(counts.values())
        return {precision: count / total for precision, count in counts.most_common()} if total else {}

    @property
    def text(self) -> str:
        """``conv bf16 100% (avx512_core_bf16); matmul f32 100%`` and the fallback's kept nodes, or ``none``."""
        parts = []
        for op in (CONV, MATMUL):
            shares = self.shares(op)
            if not shares:
                continue
            isas = Counter(group.isa for group in self.groups if group.op == op for _ in range(group.count))
            figures = ", ".join(f"{precision} {share:.0%}" for precision, share in shares.items())
            parts.append(f"{op} {figures} ({isas.most_common(1)[0][0]})")
        if self.kept is not None:
            parts.append(f"kept f32 {self.kept.ran_f32} of {self.kept.marked}")
        return "; ".join(parts) or f"no conv or matmul kernel in the {self.source}"

    def contradiction(self, precision: str, *, native_bf16: bool) -> Optional[str]:
        """Why these kernels contradict a row at ``precision`` (``native_bf16``: its bf16 said native), or None."""
        ran = {group.computes for group in self.groups}
        wanted = LABEL_KERNELS.get(precision)
        if not ran or wanted is None:
            return None
        if wanted == "f32":
            loose = sorted({g.fpmath for g in self.groups if g.fpmath})
            reduced = sorted(ran - {"f32"})
            if reduced:
                return f"an fp32 row whose kernels ran {', '.join(reduced)} ({self.text}; {self.source})"
            if loose:
                return (f"an fp32 row whose f32 kernels were allowed {', '.join(loose)} math (oneDNN's fpmath mode; "
                        f"ONEDNN_DEFAULT_FPMATH_MODE or torch's fp32_precision set it; {self.text})")
            return None
        if wanted not in ran:
            return f"a {precision} row that ran no {wanted} kernel ({self.text}; {self.source})"
        if wanted == "bf16" and native_bf16:
            emulated = [g.isa for g in self.groups if g.computes == "bf16" and not _reduced_unit(g.isa)]
            if emulated and len(emulated) == sum(1 for g in self.groups if g.computes == "bf16"):
                return (f"a bf16 row said to run native bf16 whose bf16 kernels ran without bf16 units "
                        f"({', '.join(sorted(set(emulated)))}; {self.source})")
        if self.kept is not None and self.kept.ran_f32 < self.kept.marked:
            return (f"the fp32 fallback keeps {self.kept.marked} conv/matmul nodes in f32, and "
                    f"{self.kept.marked - self.kept.ran_f32} of them ran {precision} ({self.source})")
        return None


def _reduced_unit(isa: str) -> bool:
    return any(unit in isa for unit in REDUCED_UNITS)


def _grouped(kernels: Iterable[tuple[str, str, str, str]], source: str,
             kept: Optional[KeptNodes] = None) -> KernelProof:
    """A proof of ``kernels``, each (op, precision, isa, fpmath), counted."""
    counts = Counter(kernels)
    return KernelProof(source, tuple(KernelGroup(op, precision, isa, count, fpmath)
                                     for (op, precision, isa, fpmath), count in sorted(counts.items())), kept)


_FIELD = re.compile(r"\b(src|wei)[:_]([a-z0-9]+)")
_FPMATH = re.compile(r"attr-fpmath:([a-z0-9]+)")


def read_onednn(lines: Iterable[str]) -> KernelProof:
    """The conv and matmul primitives oneDNN executed, from its verbose lines (``...,exec,cpu,<kind>,<impl>,...``)."""
    found = []
    for line in lines:
        fields = line.strip().split(",")
        if "exec" not in fields or not fields[0].endswith("verbose"):
            continue
        at = fields.index("exec")
        if len(fields) < at + 7 or fields[at + 2] not in ONEDNN_KINDS:
            continue
        kind, impl, descriptors, attributes = fields[at + 2], fields[at + 3], fields[at + 5], fields[at + 6]
        types = dict(_FIELD.findall(descriptors))
        precision = PRECISION_OF.get(types.get("src", ""), types.get("src", "?"))
        fpmath = _FPMATH.search(attributes)
        loose = fpmath.group(1) if fpmath and fpmath.group(1) not in ("strict", "f32", "any") else ""
        found.append((ONEDNN_KINDS[kind], precision, impl.split(":")[-1], loose if precision == "f32" else ""))
    return _grouped(found, "oneDNN verbose")


def read_openvino(runtime_model: Any, kept_names: frozenset[str] = frozenset()) -> KernelProof:
    """The conv and matmul nodes of OpenVINO's ``runtime_model``, and how many of ``kept_names``' ran f32."""
    found, marked, ran_f32 = [], 0, 0
    for op in runtime_model.get_ops():
        info = op.get_rt_info()
        kind = OPENVINO_KINDS.get(info["layerType"].astype(str))
        if kind is None:
            continue
        precision = info["runtimePrecision"].astype(str)
        found.append((kind, PRECISION_OF.get(precision, precision), info["primitiveType"].astype(str), ""))
        if kept_names and kept_names & set(info["originalLayersNames"].astype(str).split(",")):
            marked += 1
            ran_f32 += precision == "f32"
    return _grouped(found, "OpenVINO runtimePrecision", KeptNodes(marked, ran_f32) if kept_names else None)


def read_ort(events: Iterable[dict]) -> KernelProof:
    """The conv and matmul nodes ONNX Runtime ran, from its profile's ``*_kernel_time`` node events."""
    found = []
    for event in events:
        args = event.get("args") or {}
        kind = ORT_KINDS.get(args.get("op_name", ""))
        if kind is None or event.get("cat") != "Node" or not str(event.get("name", "")).endswith("_kernel_time"):
            continue
        types = [next(iter(shape), "") for shape in args.get("input_type_shape", []) if shape]
        quantized = "Integer" in args["op_name"] or args["op_name"].startswith(("QLinear", "QGemm", "Dynamic"))
        precision = "i8" if quantized else PRECISION_OF.get(types[0] if types else "", types[0] if types else "?")
        found.append((kind, precision, args.get("provider", "?"), ""))
    return _grouped(found, "ONNX Runtime profile")


def read_ort_profile(path: str) -> KernelProof:
    """:func:`read_ort` of the profile file at ``path``."""
    with open(path, encoding="utf-8") as fh:
        return read_ort(json.load(fh))


@contextlib.contextmanager
def _stdout_to(file) -> Iterator[None]:
    """File descriptor 1 (where oneDNN prints) sent to ``file`` for the block, C's and Python's buffers flushed."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    os.dup2(file.fileno(), 1)
    try:
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)


def onednn_lines(call: Callable[[], Any]) -> list[str]:
    """oneDNN's verbose lines of ``call`` (torch's oneDNN), its other output passed on."""
    with tempfile.TemporaryFile() as captured:
        with _stdout_to(captured), torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
            call()
        captured.seek(0)
        lines = captured.read().decode(errors="replace").splitlines()
    rest = [line for line in lines if not line.startswith("onednn_verbose")]
    if rest:
        print("\n".join(rest), flush=True)
    return [line for line in lines if line.startswith("onednn_verbose")]
