"""``diagnose`` on healthy models: no false alarm, and what localising costs.

Run:  .venv/bin/python benchmarks/diagnose_cost.py [--variants eager,traced,exported] [--precision bf16]
          [--batch 1] [--models resnet18,encoder]
      .venv/bin/python benchmarks/diagnose_cost.py --planted --variants eager,traced,exported,compiled,aoti,ort,openvino

For each model (torchvision's resnet18 at 224x224 with its seeded random weights; ``encoder``: one pre-norm
transformer encoder layer, 8 heads, width 256, 128 tokens) and each variant it runs the harness at the precision
on seeded inputs and prints: the status, the layer named (none is the expected answer on these healthy models),
the builds made and announced (equal), the largest own error and the wall time. The issue's target: at bf16,
batch 1, resnet18 localised in at most 3 minutes per variant on 2 cores. Run it on an otherwise idle machine.
The tolerance is the config default of the precision (fp16's for bf16 until bf16 has its own).

``--planted``: instead, the built-in planted nets (trtbench/models/planted.py: a bf16 resolution fault and an fp16 range
fault in block 1 and 3) on each listed variant, printing the layer named by taps and by splice against the planted
one, for the paths too slow for the suite (every build an ONNX export or an Inductor compile).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch import nn

from trtbench.config.config import default_tolerances
from trtbench.diagnose.build import Recipe
from trtbench.diagnose.floor import ranked
from trtbench.diagnose.harness import Settings, diagnose, tolerance_judge


class EncoderLayer(nn.Module):
    """A pre-norm transformer encoder layer written out, so that each part is a layer of its own."""

    def __init__(self, width: int = 256, heads: int = 8):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attention(y, y, y, need_weights=False)[0]
        return x + self.down(self.act(self.up(self.norm2(x))))


def model_and_inputs(name: str, batch: int) -> tuple[nn.Module, tuple]:
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        if name == "resnet18":
            import torchvision

            return torchvision.models.resnet18().eval(), (torch.randn(batch, 3, 224, 224, generator=generator),)
        return EncoderLayer().eval(), (torch.randn(batch, 128, 256, generator=generator),)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", default="eager,traced,exported")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--models", default="resnet18,encoder")
    parser.add_argument("--planted", action="store_true")
    args = parser.parse_args()
    if args.planted:
        planted(args.variants.split(","))
        return
    tolerances = default_tolerances()
    tolerance = tolerances.get(args.precision, tolerances["fp16"])
    print(f"threads {torch.get_num_threads()}, torch {torch.__version__}, precision {args.precision}, "
          f"batch {args.batch}, tolerance {tolerance}")
    for name in args.models.split(","):
        model, inputs = model_and_inputs(name, args.batch)
        for variant in args.variants.split(","):
            start = time.perf_counter()
            diagnosis = diagnose(model, inputs, Recipe(variant, args.precision, torch.device("cpu")),
                                 Settings(tolerance_judge(tolerance), 10.0, lambda line: None), f"b{args.batch}")
            wall = time.perf_counter() - start
            worst = next((e for e in ranked(diagnosis.layers) if e.own_sqnr_db is not None), None)
            found = diagnosis.to_dict()
            print(f"{name} {variant}: {diagnosis.status}, named {diagnosis.named}, taps named {found['tap_layer']}, "
                  f"builds {diagnosis.builds} (announced {diagnosis.builds_announced}), "
                  f"largest own error {worst.path if worst else '-'} "
                  f"{worst.own_sqnr_db if worst else float('nan'):.1f} dB, median "
                  f"{found['median_own_db'] if found['median_own_db'] is not None else float('nan'):.1f} dB, "
                  f"{wall:.0f} s\n  {diagnosis.sentence()}")


def planted(variants: list[str]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from helpers.planted import planted_inputs
    from trtbench.models.planted import planted_net, planted_path

    tolerance = default_tolerances()["fp16"]
    for variant in variants:
        for fault in ("bf16", "fp16"):
            for at in (1, 3):
                start = time.perf_counter()
                recipe = Recipe(variant, fault, torch.device("cpu"))
                diagnosis = diagnose(planted_net(fault, at), planted_inputs(), recipe,
                                     Settings(tolerance_judge(tolerance), 10.0, lambda line: None))
                found = diagnosis.to_dict()
                verdict = "PASS" if diagnosis.named == found["tap_layer"] == planted_path(at) else "----"
                print(f"{verdict} {variant} {fault} planted {planted_path(at)}: {diagnosis.status}, taps "
                      f"{found['tap_layer']}, splice {found['splice_layer']}, builds {diagnosis.builds} "
                      f"(announced {diagnosis.builds_announced}), {time.perf_counter() - start:.0f} s"
                      f"{'' if diagnosis.status != 'unavailable' else ': ' + diagnosis.reason[:160]}")


if __name__ == "__main__":
    main()
