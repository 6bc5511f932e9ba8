#!/usr/bin/env bash
# Step 2 of the kvplan GitHub Action (action.yml): `kvplan check` on the deployments files.
#
#   KVPLAN_DEPLOYMENTS  files or globs, separated by spaces or newlines (required)
#   KVPLAN_JUNIT        JUnit XML report path ("" for none)
#   KVPLAN_ARGS         extra arguments for kvplan check (split as the shell splits words)
#   PYTHON              the interpreter kvplan was installed into (default: python3)
# kvplan itself prints the ::error annotations (GITHUB_ACTIONS=true) and appends the job summary
# (GITHUB_STEP_SUMMARY). Writes exit-code=N to $GITHUB_OUTPUT when set; exits with kvplan's code.
set -uo pipefail
py=${PYTHON:-python3}
shopt -s nullglob globstar
files=()
set -f  # split the input into patterns without expanding them yet
# shellcheck disable=SC2206
patterns=(${KVPLAN_DEPLOYMENTS:?KVPLAN_DEPLOYMENTS is empty: give the deployments files})
set +f
for pattern in "${patterns[@]}"; do
  # shellcheck disable=SC2206
  matches=($pattern)
  if [ ${#matches[@]} -eq 0 ]; then
    echo "::error title=kvplan check::no file matches '$pattern' (input deployments)"
    exit 1
  fi
  files+=("${matches[@]}")
done
args=()
[ -n "${KVPLAN_JUNIT:-}" ] && args+=(--junit-xml "$KVPLAN_JUNIT")
# shellcheck disable=SC2206
[ -n "${KVPLAN_ARGS:-}" ] && args+=(${KVPLAN_ARGS})
"$py" -m kvplan.cli check "${args[@]}" "${files[@]}"
rc=$?
[ -n "${GITHUB_OUTPUT:-}" ] && echo "exit-code=$rc" >> "$GITHUB_OUTPUT"
exit $rc
