#!/usr/bin/env python3
"""Write a folder of natural-image JPEGs for INT8 calibration, with nothing downloaded.

scikit-learn ships two photographs (``sklearn.datasets.load_sample_images``: a temple and a flower,
427x640). This cuts seeded random crops of them (scale, position and flip), so calibration and
evaluation see natural-image statistics rather than noise. Two photographs are not ImageNet: the
accuracy figures they give say how far INT8 moves the outputs, not the model's task accuracy.

    python scripts/make_calibration_images.py calibration_images --count 192
    trtbench --config resnet18_int8.yaml   # after setting calibration: {source: images, path: calibration_images}
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write (created)")
    parser.add_argument("--count", type=int, default=192, help="images to write (default 192)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from sklearn.datasets import load_sample_images

    photos = load_sample_images().images
    rng = np.random.default_rng(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    for i in range(args.count):
        photo = photos[i % len(photos)]
        height, width = photo.shape[:2]
        side = int(rng.integers(min(height, width) // 3, min(height, width) + 1))
        top, left = int(rng.integers(0, height - side + 1)), int(rng.integers(0, width - side + 1))
        crop = photo[top:top + side, left:left + side]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        Image.fromarray(np.ascontiguousarray(crop)).save(args.out / f"crop{i:04d}.jpg", quality=90)
    print(f"wrote {args.count} images to {args.out}")


if __name__ == "__main__":
    main()
