#!/usr/bin/env bash
# Run trtbench in the image on all GPUs; arguments go to trtbench.
#   scripts/docker_run.sh --config resnet34.yaml   # results in ./results/resnet34/
#   scripts/docker_run.sh validate my.yaml         # paths relative to this directory work
# The current directory is mounted read-only as the working directory, ./results as
# /results (writable, owned by you), and the named volume trtbench-cache (CACHE_VOLUME picks another) as
# /cache, where torch.compile and Triton keep compiled code, so a second run skips most compiles.
# IMAGE picks the image (default trtbench:latest).
set -euo pipefail
mkdir -p "${PWD}/results"
exec docker run --rm --gpus all \
    --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 \
    --user "$(id -u):$(id -g)" \
    --volume "${PWD}:/workspace/project:ro" --workdir /workspace/project \
    --volume "${PWD}/results:/results" --volume "${CACHE_VOLUME:-trtbench-cache}:/cache" \
    "${IMAGE:-trtbench:latest}" "$@"
