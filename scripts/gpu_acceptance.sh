#!/usr/bin/env bash
# The first run on a GPU machine: resnet34.yaml (bundled) at fp32 and fp16 with every TensorRT
# variant, and at int8 with trt (NVIDIA ModelOpt + Torch-TensorRT, calibrated on random inputs),
# inside the trtbench image, then `trtbench verify`, then one verdict line per check
# (scripts/gpu_acceptance_check.py): every TRT row ok; skipped rows may be skipped here (each with a
# WARN line and its reason; eager and TRT rows must run); parity ok for the rows that ran (trt int8:
# within the INT8 accuracy budget); TRT fp16 faster than eager fp16 and compiled fp16 at opt (or why
# one of those was not timed); artifacts reload in a
# fresh process. Exit 0 when every check passes.
#   scripts/gpu_acceptance.sh            # from the repository root; results in ./results/gpu_acceptance/
# IMAGE picks the image (default trtbench:latest, from scripts/docker_build.sh).
set -euo pipefail

if [[ ! -f /opt/trtbench/base-versions.txt ]]; then  # on the host: run this script inside the image
    cd "$(dirname "${BASH_SOURCE[0]}")/.."
    mkdir -p results
    exec docker run --rm --gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 \
        --user "$(id -u):$(id -g)" \
        --volume "${PWD}/scripts:/opt/trtbench-acceptance:ro" --volume "${PWD}/results:/results" \
        --env TRTBENCH_BIN=bash "${IMAGE:-trtbench:latest}" /opt/trtbench-acceptance/gpu_acceptance.sh
fi

here=$(dirname "${BASH_SOURCE[0]}")
out=${TRTBENCH_RESULTS:-/results}/gpu_acceptance
config=$(mktemp --suffix=.yaml)
python3 - "$config" <<'PY'
import sys

import yaml

from trtbench.config.config import bundled_config_dir

config = yaml.safe_load((bundled_config_dir() / "resnet34.yaml").read_text())
config.update(name="gpu_acceptance", precisions=["fp32", "fp16", "int8"])
with open(sys.argv[1], "w") as fh:
    yaml.safe_dump(config, fh)
PY
echo "== base image: $(tr '\n' ' ' < /opt/trtbench/base-versions.txt)"
trtbench run --config "$config" --device cuda --output "$out" || echo "== trtbench run exited $?"
verify_rc=0
trtbench verify "$out" || verify_rc=$?
echo "== verdicts"
exec python3 "$here/gpu_acceptance_check.py" "$out" "$verify_rc"
