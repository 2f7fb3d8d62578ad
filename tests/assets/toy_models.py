"""Small real models for fast tests (importable as ``toy_models:<factory>`` with tests/assets on the path)."""

import time
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn


class TinyCNN(nn.Module):
    """A conv-bn-relu-pool-linear classifier: the shape of a ResNet stem, a few thousand parameters."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def tiny_cnn(num_classes: int = 10) -> nn.Module:
    return TinyCNN(num_classes)


class Unscriptable(TinyCNN):
    """Traceable but not scriptable: forward uses a Python construct TorchScript rejects."""

    def forward(self, x):
        scale = {k: v for k, v in zip("ab", (1.0, 2.0))}  # dict comprehension over a str: not TorchScript
        return super().forward(x) * scale["a"]


def unscriptable() -> nn.Module:
    return Unscriptable()


class InterruptAfter(TinyCNN):
    """Raises KeyboardInterrupt (as Ctrl-C would) on its Nth call, to test interrupted runs."""

    def __init__(self, calls: int):
        super().__init__()
        self.calls_left = calls

    def forward(self, x):
        self.calls_left -= 1
        if self.calls_left < 0:
            raise KeyboardInterrupt
        return super().forward(x)


def interrupt_after(calls: int = 30) -> nn.Module:
    return InterruptAfter(calls)


def not_a_module():
    return 42


class AlwaysDropout(nn.Module):
    """Applies dropout even in eval mode, so no two runs agree: a model whose accuracy check must fail."""

    def __init__(self):
        super().__init__()
        self.body = TinyCNN()

    def forward(self, x):
        return torch.nn.functional.dropout(self.body(x), p=0.5, training=True)


def always_dropout() -> nn.Module:
    return AlwaysDropout()


class ChannelsLastOnly(nn.Module):
    """Refuses inputs that are not in channels_last layout (to prove the layout option is applied)."""

    def __init__(self):
        super().__init__()
        self.body = TinyCNN()

    def forward(self, x):
        if not x.is_contiguous(memory_format=torch.channels_last):
            raise RuntimeError("expected a channels_last input")
        return self.body(x)


def channels_last_only() -> nn.Module:
    return ChannelsLastOnly()


class FailsAboveBatch(nn.Module):
    """Raises for batches larger than ``limit``: a model that breaks at the max shape only."""

    def __init__(self, limit: int = 2):
        super().__init__()
        self.limit = limit
        self.body = TinyCNN()

    def forward(self, x):
        if x.shape[0] > self.limit:
            raise ValueError("batch too large for this model")
        return self.body(x)


def fails_above_batch(limit: int = 2) -> nn.Module:
    return FailsAboveBatch(limit)


class TwoInputs(nn.Module):
    """Tokens and a mask that share their batch and sequence dims (an encoder's input pair)."""

    def __init__(self, vocab: int = 50, width: int = 8):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Linear(width, 4)

    def forward(self, ids, mask):
        x = self.embed(ids) * mask.unsqueeze(-1)
        return self.head(x.sum(1) / mask.sum(1, keepdim=True).clamp(min=1))


def two_inputs() -> nn.Module:
    return TwoInputs()


class EagerFailsAboveBatch(nn.Module):
    """Raises for batches above ``limit`` in eager mode only; its TorchScript runs every batch."""

    def __init__(self, limit: int = 2):
        super().__init__()
        self.limit = limit
        self.body = TinyCNN()

    def forward(self, x):
        if not torch.jit.is_scripting() and x.shape[0] > self.limit:
            raise ValueError("eager refuses large batches")
        return self.body(x)


def eager_fails_above_batch(limit: int = 2) -> nn.Module:
    return EagerFailsAboveBatch(limit)


class DictOutput(nn.Module):
    """Returns a dict of tensors, as Hugging Face models do: torch.jit.trace needs strict=False for it."""

    def __init__(self):
        super().__init__()
        self.body = TinyCNN()

    def forward(self, x):
        logits = self.body(x)
        return {"logits": logits, "probs": logits.softmax(-1)}


def dict_output() -> nn.Module:
    return DictOutput()


def tiny_bert() -> nn.Module:
    """A one-layer, 16-wide ``transformers`` BERT (random weights); it returns a ModelOutput (a dict)."""
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    return BertModel(config)


class ScriptedOffByOne(nn.Module):
    """Adds 1 to its logits when scripted only: a variant that fails its accuracy check every time,
    deterministically."""

    def __init__(self):
        super().__init__()
        self.body = TinyCNN()

    def forward(self, x):
        out = self.body(x)
        if torch.jit.is_scripting():
            out = out + 1.0
        return out


def scripted_off_by_one() -> nn.Module:
    return ScriptedOffByOne()


class ExitsOutsideParent(TinyCNN):
    """Its Python forward, run for inference in any process but the test's own (``TOY_PARENT_PID``),
    ends that process, as a runtime that crashes in a timing worker would. Tracing it (under
    no_grad, not inference mode) does not, and the traced copy no longer runs that Python."""

    def forward(self, x):
        import os

        if torch.is_inference_mode_enabled() and str(os.getpid()) != os.environ.get("TOY_PARENT_PID", str(os.getpid())):
            os._exit(7)
        return super().forward(x)


def exits_outside_parent() -> nn.Module:
    return ExitsOutsideParent()


class SlowBuilds(TinyCNN):
    """Builds slowly: tracing it sleeps ``TRACE_SLEEP_S`` (the traced variant's build, in the run's process), and
    its Python forward, run for inference in any process but the test's own (``TOY_PARENT_PID``: eager's timing
    worker, whose build makes a first call), sleeps an hour. Traced, its saved graph runs without that Python."""

    TRACE_SLEEP_S = 1.0

    def forward(self, x):
        import os
        import time

        pid = str(os.getpid())
        if torch.jit.is_tracing():
            time.sleep(self.TRACE_SLEEP_S)
        elif torch.is_inference_mode_enabled() and os.environ.get("TOY_PARENT_PID", pid) != pid:
            time.sleep(3600)
        return super().forward(x)


def slow_builds() -> nn.Module:
    return SlowBuilds()


class OffOutsideParent(TinyCNN):
    """Its Python forward, run for inference in any process but the test's own (``TOY_PARENT_PID``),
    adds 1 to its output: a build that computes otherwise where it is timed. Traced (under no_grad,
    not inference mode) it records the parent's branch, and its saved file computes as the parent."""

    def forward(self, x):
        import os

        out = super().forward(x)
        elsewhere = str(os.getpid()) != os.environ.get("TOY_PARENT_PID", str(os.getpid()))
        return out + 1 if torch.is_inference_mode_enabled() and elsewhere else out


def off_outside_parent() -> nn.Module:
    return OffOutsideParent()


@dataclass
class Prediction:
    """A model output container, as libraries return them (a Hugging Face ModelOutput is one)."""

    logits: torch.Tensor
    probs: torch.Tensor
    hidden: Optional[torch.Tensor] = None  # left None, as ModelOutput leaves the outputs it was not asked for


# Registered in this process only: a .pt2 that kept this output type does not load where toy_models is not imported.
torch.utils._pytree.register_dataclass(Prediction, serialized_type_name="toy_models.Prediction")


class DataclassOutput(nn.Module):
    """Returns a :class:`Prediction` dataclass registered with torch's pytree."""

    def __init__(self):
        super().__init__()
        self.body = TinyCNN()

    def forward(self, x):
        logits = self.body(x)
        return Prediction(logits=logits, probs=logits.softmax(-1))


def dataclass_output() -> nn.Module:
    return DataclassOutput()


@torch.library.custom_op("toy_models::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    """An operator that exists only in processes that imported toy_models."""
    return x * 2


@twice.register_fake
def _twice_shape(x):
    return torch.empty_like(x)


class UsesCustomOp(TinyCNN):
    """Calls ``toy_models::twice``: its TorchScript does not load in a process that has not imported toy_models."""

    def forward(self, x):
        return torch.ops.toy_models.twice(super().forward(x))


def uses_custom_op() -> nn.Module:
    return UsesCustomOp()


class HeavyHead(nn.Module):
    """A [N, 3, 16, 16] classifier with ``width`` x 768 fp32 weights (3 MiB at the default width)."""

    def __init__(self, width: int = 1024):
        super().__init__()
        self.hidden = nn.Linear(3 * 16 * 16, width)
        self.out = nn.Linear(width, 10)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(torch.flatten(x, 1))))


def heavy_head(width: int = 1024) -> nn.Module:
    return HeavyHead(width)


class HiddenTable(TinyCNN):
    """Holds a ``mib`` MiB tensor as a plain attribute (not a parameter or buffer): a trace embeds it as a constant,
    so the saved file is far larger than the model's weights."""

    def __init__(self, mib: int = 2):
        super().__init__()
        self.table = torch.linspace(0, 1, mib * (1 << 18))

    def forward(self, x):
        return super().forward(x) + self.table[:10]


def hidden_table(mib: int = 2) -> nn.Module:
    return HiddenTable(mib)


class UnusedWeights(nn.Module):
    """A [N, 8] -> [N, 4] linear layer beside ``weight_mib`` MiB of weights its forward never reads: what is
    saved for deployment (an ONNX file keeps only what the graph reads) is tiny, while the weights a
    worker's payload carries are not."""

    def __init__(self, weight_mib: int = 24):
        super().__init__()
        self.linear = nn.Linear(8, 4)
        self.unused = nn.Parameter(torch.linspace(0, 1, weight_mib << 18), requires_grad=False)

    def forward(self, x):
        return self.linear(x)


def unused_weights(weight_mib: int = 24) -> nn.Module:
    return UnusedWeights(weight_mib)


LUCK_VAR = "TOY_PROCESS_LUCK"  # "<counter file>:<seed>": where the process-luck sleeper draws each process's speed
SLOW = 1.08  # a slow process's calls take this much longer
SLOW_SHARE = 1 / 3  # the chance that a process is slow


def luck_draws(seed: int, dtype: str, count: int) -> list[bool]:
    """Whether each of the first ``count`` worker processes at ``dtype`` is slow, for ``seed``."""
    import zlib

    import numpy as np

    return [bool(d < SLOW_SHARE) for d in np.random.default_rng([seed, zlib.crc32(dtype.encode())]).random(count)]


def _process_luck(dtype: torch.dtype) -> float:
    """This worker process's speed factor: the next draw of its dtype's stream (the k-th worker process to ask, at
    that dtype, takes draw k: a counter in the file ``TOY_PROCESS_LUCK`` names, locked). 1 in any process that
    is not a trtbench worker (no start-up padding variable): the run's own process builds and judges."""
    import fcntl
    import json
    import os

    from trtbench.workers.loop import PADDING_VAR

    if PADDING_VAR not in os.environ or LUCK_VAR not in os.environ:
        return 1.0
    try:  # wake from each sleep at once, however busy the machine: a real-time priority where this user may set one
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))  # (root); this thread only sleeps and returns
    except OSError:
        pass
    path, seed = os.environ[LUCK_VAR].rsplit(":", 1)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        counts = json.loads(handle.read() or "{}")
        index = counts.get(str(dtype), 0)
        counts[str(dtype)] = index + 1
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(counts))
    return SLOW if luck_draws(int(seed), str(dtype), index + 1)[index] else 1.0


class ProcessLuck(nn.Module):
    """A stand-in whose every call sleeps ``call_ms``, times a speed factor fixed per process at its first call: slow
    (x :data:`SLOW`) with probability :data:`SLOW_SHARE`, by a seeded draw (:func:`_process_luck`). Sleeping, its
    times barely depend on the machine's load (in a worker it sleeps at a real-time priority where that is allowed:
    under a load of 10 on 2 cores, plain sleeps of 10 ms read 10-20 ms from one process to the next). Its output is
    its input."""

    def __init__(self, call_ms: float = 4.0):
        super().__init__()
        self.call_ms, self.factor = call_ms, None
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        if self.factor is None:
            self.factor = _process_luck(x.dtype)
        time.sleep(self.call_ms * self.factor / 1e3)
        return x * self.scale


def process_luck(call_ms: float = 4.0) -> nn.Module:
    return ProcessLuck(call_ms)
