#!/usr/bin/env bash
# Device check for `kvplan simulate --allocate`: one short script for a GPU machine.
#
# Allocates and verifies the gpt-oss-20b + P-EAGLE and gemma-3-27b layouts at a 100 GiB
# budget on cuda, checks that deliberate corruptions are caught and that an oversized
# layout is refused, and runs the CLI once with --budget-from-device. Prints the figures;
# writes $OUT/gpu_check.json when OUT is set. Needs python3 with a CUDA torch; kvplan runs
# from this checkout (PYTHONPATH, nothing installed). Finishes in well under a minute on an
# H100/H200; a hard limit of 280 s keeps it inside 5 minutes whatever happens.
#
#   scripts/gpu_check.sh                 # defaults: --device cuda --budget 100GiB
#   scripts/gpu_check.sh --device cuda:1
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check: needs python3 with a CUDA build of torch and a visible GPU" >&2
  exit 2
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# typer/rich/pyyaml for the CLI step, transformers for reading the bundled configs. Missing
# ones are installed if the machine can reach an index; otherwise the script goes on with
# hand-built layer specs and skips the CLI step.
missing=()
for mod in typer rich yaml transformers; do
  "$PY" -c "import $mod" 2>/dev/null || missing+=("$([ "$mod" = yaml ] && echo pyyaml || echo "$mod")")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "gpu_check: installing ${missing[*]}"
  timeout 90 "$PY" -m pip install --quiet --retries 0 --timeout 10 "${missing[@]}" \
    || echo "gpu_check: could not install ${missing[*]}; continuing without"
fi

exec timeout 280 "$PY" scripts/gpu_check.py "$@"
