# trtbench on NVIDIA's NGC PyTorch image, whose PyTorch, torchvision, Torch-TensorRT and
# TensorRT are built and tested together; this file never reinstalls or upgrades them.
#
# Pinned tag -> versions (see docs/tensorrt.md for sources and what is still unconfirmed):
#   nvcr.io/nvidia/pytorch:26.09-py3: PyTorch 2.14.0a0+b2c75dd062.nv26.09, CUDA 13.4,
#   Python 3.12, TensorRT 11.3.0.99 (as reported for the arm64 image), and a Torch-TensorRT
#   built for that PyTorch (2.14 series; not confirmed from NVIDIA's release notes).
# The build stops, saying why, if the base image has no torch_tensorrt, and records the
# versions it found in /opt/trtbench/base-versions.txt.
ARG BASE_IMAGE=nvcr.io/nvidia/pytorch:26.09-py3
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

COPY docker/record_base_versions.sh /usr/local/bin/trtbench-record-base-versions
RUN trtbench-record-base-versions /opt/trtbench/base-versions.txt

# nss_wrapper lets the entrypoint give any uid (docker run --user "$(id -u):$(id -g)") a passwd
# entry, which `import torch_tensorrt` needs. jemalloc and TCMalloc are what benchmark.allocator
# preloads into the worker processes (TCMalloc's package is libtcmalloc-minimal4t64 on Ubuntu 24.04
# and later, libtcmalloc-minimal4 before). Unpinned: the versions are the base distribution's.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libnss-wrapper libjemalloc2 \
    && (apt-get install -y --no-install-recommends libtcmalloc-minimal4t64 \
        || apt-get install -y --no-install-recommends libtcmalloc-minimal4) \
    && rm -rf /var/lib/apt/lists/*

# trtbench itself without dependencies (its torch pin must not replace the image's torch),
# then only the light dependencies (intel-openmp: Intel's OpenMP runtime for benchmark.openmp: intel; ruptures, which
# brings scipy: the machine's regimes and the statistics trtbench takes from scipy; cattrs, with attrs: results' JSON);
# pip applies the image's PIP_CONSTRAINT
# (/etc/pip/constraint.txt), so names already in the image keep their versions.
COPY . /tmp/trtbench-src
# hadolint ignore=DL3013
RUN pip install --no-cache-dir --no-deps --no-build-isolation /tmp/trtbench-src \
    && pip install --no-cache-dir alive-progress==3.3.0 pyyaml matplotlib numpy ruptures scipy intel-openmp cattrs \
    && rm -rf /tmp/trtbench-src

COPY docker/entrypoint.sh /usr/local/bin/trtbench-entrypoint

# Runs as an unprivileged user; /results is writable by any uid so `docker run --user`
# can match the host owner of the mounted results folder.
# /cache holds torch.compile's compiled code (Inductor's FX graph and AOTAutograd caches, Triton's kernels): mounted
# as a named volume (scripts/docker_run.sh), a second run reuses them (docs/docker.md).
RUN useradd --create-home --uid 10001 --shell /bin/bash trtbench \
    && install -d -m 1777 /results /cache
ENV TRTBENCH_RESULTS=/results \
    MPLCONFIGDIR=/tmp/matplotlib \
    XDG_CACHE_HOME=/tmp/cache \
    TORCHINDUCTOR_CACHE_DIR=/cache/torchinductor \
    TRITON_CACHE_DIR=/cache/triton
VOLUME /results
USER 10001
WORKDIR /workspace

# NVIDIA's entrypoint prints the image banner and sets up CUDA forward compatibility,
# then runs ours, which runs trtbench.
ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh", "/usr/local/bin/trtbench-entrypoint"]
CMD ["--help"]
