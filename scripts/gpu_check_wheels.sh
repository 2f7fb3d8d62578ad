#!/usr/bin/env bash
# The small pure-Python wheels scripts/gpu_check.sh installs on the lent GPU machine (its image has torch, numpy,
# PyYAML, matplotlib, onnx and pynvml, and no network): alive-progress with its two pinned dependencies, and
# transformers at the version trtbench's generate scenario is tested with (the image's is older). Into .whl/
# (ignored by git), about 12 MiB; the device call carries it (carry: [".whl"]).
#   scripts/gpu_check_wheels.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=${PYTHON:-python3}
"$python" -m pip download -q --no-deps --only-binary=:all: -d .whl \
    alive-progress==3.3.0 about-time==4.2.1 graphemeu==0.7.2 transformers==5.24.0
ls -la .whl
