#!/usr/bin/env bash
# Build step: record the base image's PyTorch / Torch-TensorRT / TensorRT versions in FILE, and stop
# the build, saying why, when the base has no torch_tensorrt (trtbench's TensorRT variants need it).
#   record_base_versions.sh FILE
set -euo pipefail
out=$1
mkdir -p "$(dirname -- "$out")"
pip list --format=freeze 2>/dev/null \
    | grep -iE '^(torch|torchvision|torch[-_]tensorrt|tensorrt[-_a-z0-9]*)==' > "$out" || true
cat "$out"
if ! grep -qiE '^torch[-_]tensorrt==' "$out"; then
    echo "error: the base image has no torch_tensorrt (pip list shows none), so the TensorRT variants could" \
         "never run in this image. Build FROM an NGC PyTorch image that ships Torch-TensorRT (the Dockerfile's" \
         "default, nvcr.io/nvidia/pytorch:26.09-py3), or pass such an image as BASE_IMAGE." >&2
    exit 1
fi
