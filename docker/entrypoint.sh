#!/usr/bin/env bash
# Container entrypoint: `docker run IMAGE ARGS...` runs `trtbench ARGS...`.
#
# - Config names are passed through: trtbench resolves bare names (resnet34, resnet34.yaml)
#   against its bundled configs, and paths relative to the working directory.
# - A run (`run ...`, or trtbench's implicit run `--config ...`) without --output writes to
#   "$TRTBENCH_RESULTS/<config name>", e.g. /results/resnet34 (the image sets
#   TRTBENCH_RESULTS=/results, its volume). An explicit --output is left alone.
# - TRTBENCH_BIN replaces the trtbench executable (the tests point it at a stub).
set -euo pipefail

case "${1:-}" in
    "" | validate | models | verify | -h | --help) ;;
    *)
        config="" has_output=0 previous=""
        for arg in "$@"; do
            case "$arg" in
                --output | --output=*) has_output=1 ;;
                --config=*) config="${arg#--config=}" ;;
            esac
            if [[ "$previous" == "--config" ]]; then
                config="$arg"
            fi
            previous="$arg"
        done
        if [[ -n "$config" ]] && ((!has_output)); then
            name="$(basename -- "$config")"
            name="${name%.yaml}"
            set -- "$@" --output "${TRTBENCH_RESULTS:-/results}/${name%.yml}"
        fi
        ;;
esac
exec "${TRTBENCH_BIN:-trtbench}" "$@"
