#!/usr/bin/env bash
# Build the trtbench image from the repository root's Dockerfile.
#   scripts/docker_build.sh [docker build options...]
# IMAGE names the image (default trtbench:latest); BASE_IMAGE replaces the pinned NGC tag.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
args=(--tag "${IMAGE:-trtbench:latest}")
if [[ -n "${BASE_IMAGE:-}" ]]; then
    args+=(--build-arg "BASE_IMAGE=${BASE_IMAGE}")
fi
exec docker build "${args[@]}" "$@" .
