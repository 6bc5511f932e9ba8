#!/usr/bin/env bash
# Smoke-test `kvplan check` as a CI gate on the shipped deployment examples.
#
#   scripts/ci-smoke.sh            (from anywhere; it works from the repository root)
#
# 1. Every passing example under configs/deployments/*.yaml must pass (exit 0).
# 2. The deliberately failing examples under configs/deployments/failing/ must fail with
#    exit 3 (an expectation does not hold), not 0 (the gate let it through) or 1 (the
#    tool broke): this proves the gate still closes.
# Exits non-zero if either step does not behave as described.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v kvplan >/dev/null 2>&1; then
  KVPLAN=(kvplan)
else
  KVPLAN=("${PYTHON:-python3}" -m kvplan.cli)
fi

shopt -s nullglob
passing=(configs/deployments/*.yaml)
failing=(configs/deployments/failing/*.yaml)
if [ ${#passing[@]} -eq 0 ]; then
  echo "ci-smoke: no deployment examples in configs/deployments/" >&2
  exit 1
fi

echo "ci-smoke: kvplan check ${passing[*]}"
"${KVPLAN[@]}" check "${passing[@]}"

for f in "${failing[@]}"; do
  echo "ci-smoke: kvplan check $f (must fail with exit 3)"
  rc=0
  "${KVPLAN[@]}" check --format json "$f" >/dev/null || rc=$?
  if [ "$rc" -ne 3 ]; then
    echo "ci-smoke: expected exit 3 from the failing example $f, got $rc" >&2
    exit 1
  fi
done
echo "ci-smoke: ok"
