#!/usr/bin/env bash
# The GPU check: the CUDA paths in at most 5 minutes of device time, each part in a time share of its own,
# its report in gpu_check/report.md beside each part's raw results (trtbench's results folders, fidelity.json).
#   scripts/gpu_check.sh                 # on a GPU machine, from the repository root
#   scripts/gpu_check.sh --device cpu    # the same checks as a rehearsal on the CPU (at most 8 min on 2 cores)
#   scripts/gpu_check.sh --out DIR       # results somewhere else (default: gpu_check/)
# Parts, each with its share on a GPU [on the CPU rehearsal]:
#   resnet34 at fp32 and fp16 over eager, traced, scripted, exported and compiled at batch 1/2/16, with budget_s 3
#     and max_build_s 90: 100 s [190 s: 64x64, opt only, fp32; every CPU part at 1 thread];
#   eager replaying a CUDA graph (cuda_graphs: true) at batch 2: 25 s [not on a CPU];
#   resnet50 at batch 64, where fp16 must beat fp32: 25 s [60 s: batch 8 at 64x64, fp32 only];
#   the tiny Llama (configs/tinyllama.yaml's size) on eager and compiled at fp32, fp16 and bf16: 40 s [2 layers,
#     fp32 and bf16; 110 s] (it gave up 30 s of its 70 to the fp16 localisation; stopped, it keeps the rows it timed);
#   trtbench's eager and compiled readings against torch.utils.benchmark and triton's do_bench: per variant, its
#     trtbench worker and a reference process, both built from the row's worker recipe (they start and build at
#     once, the compile from the resnet34 part's warm Inductor cache), then 4 pairs side by side in time, 0.5 s for
#     trtbench and for each reference (trtbench's after its 0.5 s warm-up): about 8 s a variant once built: 45 s [Timer
#     only, 1 s a side: about 12 s a variant once built; the rehearsal's compiled workers took 3.5 s for their
#     first call from that cache: 60 s; it gave up 30 s of its 90 to the fp16 localisation, having taken 24 s idle];
#   fp16 localisation: `trtbench diagnose` of the built-in planted_net (an fp16 overflow planted in blocks.3) at fp16
#     on eager, trt and compiled, each a PASS line naming blocks.3 or the reason: 30 s [eager and trt only: a CPU
#     localises fp16 on eager only, for accuracy; 30 s]. Each diagnosis stops itself after `localise_min` minutes
#     (its budget is checked before each build) so that the part writes what it found within its share.
# Energy and launch-bound shares come with every timed row. A part that runs out of its share is stopped (SIGINT:
# trtbench keeps what it timed) and the report says so; the others go on.
#
# On the lent GPU machine (its own torch, no network): trtbench is installed there without its dependencies, and
# the small pure-Python wheels it needs travel in .whl/ (ignored by git; built here by scripts/gpu_check_wheels.sh).
# One device call (carry .whl; the report and a tarball of the raw results come back, as $OUT takes 8 files):
#   scripts/gpu_check.sh; cp gpu_check/report.md "$OUT/"; tar czf "$OUT/gpu_check.tgz" gpu_check
set -uo pipefail

device=cuda
out=gpu_check
while [[ $# -gt 0 ]]; do
    case "$1" in
        --device) device=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: $0 [--device cuda|cpu] [--out DIR]" >&2; exit 2 ;;
    esac
done
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "${out:?}"/{configs,resnet34,cuda_graphs,resnet50,tinyllama,localise} "$out/parts.tsv" "$out/fidelity.json"

if [[ -n ${PYTHON:-} ]]; then
    python=$PYTHON
elif [[ -x .venv/bin/python ]]; then
    python=$repo/.venv/bin/python   # `make` set-up (the rehearsal from a fresh clone)
else
    python=$(command -v python3)
fi

part() {  # part NAME SHARE_S COMMAND...: run it within its share; one line of parts.tsv
    local name=$1 share=$2; shift 2
    local started=$SECONDS
    echo "== $name (share ${share} s)"
    timeout --signal=INT --kill-after=30 "$share" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - started))" "$share" >> "$out/parts.tsv"
    tail -3 "$out/$name.log"
}

if [[ $device == cuda ]]; then
    shares=(100 25 25 40 45 30)
    fidelity_s=0.5  # each side of a fidelity pair
    localise_min=0.2  # each diagnosis's budget: eager's takes seconds, compiled's two Inductor builds the rest
    # the machine's python keeps its own torch: the carried wheels and trtbench, without dependencies
    wheels=(.whl/*.whl)
    [[ -e ${wheels[0]} ]] || wheels=()
    part install 30 "$python" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile \
        --target /tmp/site "${wheels[@]}" "$repo"
    export PYTHONPATH=/tmp/site:$repo${PYTHONPATH:+:$PYTHONPATH}
else
    shares=(190 0 60 110 60 30)
    fidelity_s=1
    localise_min=0.3
    export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
fi

"$python" scripts/gpu_check.py configs "$device" "$out" || exit 2
bench() {  # bench PART SHARE_S: trtbench on the part's config, its results in OUT/PART
    part "$1" "$2" "$python" -m trtbench --config "$out/configs/$1.yaml" --output "$out/$1" --fresh
}
bench resnet34 "${shares[0]}"
[[ -f $out/configs/cuda_graphs.yaml ]] && bench cuda_graphs "${shares[1]}"
bench resnet50 "${shares[2]}"
bench tinyllama "${shares[3]}"
part fidelity "${shares[4]}" "$python" benchmarks/harness_fidelity.py --results "$out/resnet34" \
    --config "$out/configs/resnet34.yaml" --variants eager,compiled --json "$out/fidelity.json" --pairs 4 --min-run-time "$fidelity_s"
part localise "${shares[5]}" "$python" -m trtbench diagnose --config "$out/configs/localise.yaml" \
    --output "$out/localise" --precision fp16 --minutes "$localise_min"
"$python" scripts/gpu_check.py report "$device" "$out" > /dev/null && echo "== report: $out/report.md"
