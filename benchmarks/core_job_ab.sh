#!/usr/bin/env bash
# The core job (resnet34 at batch 1, 2 and 16; eager, traced, scripted; configs/resnet34.yaml's default timing) from
# two checkouts, alternated before, after, after, before; the wall seconds of each command. Run it on an idle machine.
#
# Run:  benchmarks/core_job_ab.sh BEFORE_TREE AFTER_TREE [PYTHON]
#       (each tree a checkout of trtbench, e.g. `git worktree add ../before <commit>`; PYTHON: .venv/bin/python)
set -eu
before=$(cd "$1" && pwd); after=$(cd "$2" && pwd); python=${3:-$(pwd)/.venv/bin/python}
out=$(mktemp -d)
for side in before after after before; do
  tree=$([ "$side" = before ] && echo "$before" || echo "$after")
  start=$(date +%s.%N)
  (cd "$tree" && PYTHONPATH="$tree" "$python" -m trtbench --config configs/resnet34.yaml --device cpu \
     --variants eager,traced,scripted --output "$out/$side-$RANDOM" --fresh --quiet > /dev/null 2>&1)
  echo "$side $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s"
done
