#!/usr/bin/env bash
# Container entrypoint: `docker run IMAGE ARGS...` runs `trtbench ARGS...`.
#
# - Any uid works: `docker run --user "$(id -u):$(id -g)"` gives a uid with no /etc/passwd entry,
#   and `import torch_tensorrt` calls pwd.getpwuid(os.getuid()) (KeyError without one). For such a
#   uid this writes a passwd/group pair to a private temp folder and serves it through nss_wrapper
#   (LD_PRELOAD; set-uid programs ignore it, so /etc/passwd stays read-only and trusted), and points
#   an unwritable HOME at /tmp. NSS_WRAPPER_LIB names the library (default: the distribution's).
# - Config names are passed through: trtbench resolves bare names (resnet34, resnet34.yaml)
#   against its bundled configs, and paths relative to the working directory.
# - A run (`run ...`, or trtbench's implicit run `--config ...`) without --output writes to
#   "$TRTBENCH_RESULTS/<config name>", e.g. /results/resnet34 (the image sets
#   TRTBENCH_RESULTS=/results, its volume), appending to the history "$TRTBENCH_RESULTS/history.sqlite"; an
#   explicit --output is left alone (and appends to no history unless --history says so). `history` and `gate`
#   read that history unless --history names another.
# - TRTBENCH_BIN replaces the trtbench executable (the tests point it at a stub).
set -euo pipefail

uid=$(id -u) gid=$(id -g)
if ! getent passwd "$uid" > /dev/null; then
    lib=${NSS_WRAPPER_LIB:-$(compgen -G "/usr/lib/*/libnss_wrapper.so" | head -n 1 || true)}
    if [[ -z "$lib" || ! -f "$lib" ]]; then
        echo "trtbench-entrypoint: uid $uid has no passwd entry and nss_wrapper is missing (${lib:-not found});" \
             "torch_tensorrt will not import. Run with --user set to a uid the image knows, e.g. 10001." >&2
    else
        [[ -w "${HOME:-/}" ]] || export HOME=/tmp
        nss=$(mktemp -d)
        { cat /etc/passwd; echo "trtbench-${uid}:x:${uid}:${gid}:trtbench user:${HOME}:/bin/bash"; } > "$nss/passwd"
        cat /etc/group > "$nss/group"
        getent group "$gid" > /dev/null || echo "trtbench-${gid}:x:${gid}:" >> "$nss/group"
        export LD_PRELOAD="${lib}${LD_PRELOAD:+ $LD_PRELOAD}" NSS_WRAPPER_PASSWD="$nss/passwd" \
            NSS_WRAPPER_GROUP="$nss/group"
    fi
fi

case "${1:-}" in
    "" | validate | models | verify | -h | --help) ;;
    *)
        config="" has_output=0 has_history=0 previous=""
        for arg in "$@"; do
            case "$arg" in
                --output | --output=*) has_output=1 ;;
                --history | --history=*) has_history=1 ;;
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
            ((has_history)) || set -- "$@" --history "${TRTBENCH_RESULTS:-/results}/history.sqlite"
        elif [[ "$1" == "history" || "$1" == "gate" ]] && ((!has_history)); then
            set -- "$@" --history "${TRTBENCH_RESULTS:-/results}/history.sqlite"
        fi
        ;;
esac
exec "${TRTBENCH_BIN:-trtbench}" "$@"
