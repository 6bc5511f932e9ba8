#!/usr/bin/env bash
# Step 1 of the kvplan GitHub Action (action.yml): install kvplan into the job's Python.
#
#   KVPLAN_VERSION   what to install:
#                      ""            the action's own checkout (the folder `uses:` names)
#                      *.whl / dir   a wheel file or a source directory
#                      1.2.3         that release from the package index
#                      anything else a pip requirement as written (e.g. git+https://…@ref)
#   KVPLAN_ACTION_PATH  the action's checkout (github.action_path)
#   PYTHON           the interpreter to install into (default: python3)
# Never an editable install: the job runs exactly what a user's `pip install` gets.
set -euo pipefail
py=${PYTHON:-python3}
spec=${KVPLAN_VERSION:-}
if [ -z "$spec" ]; then
  spec=${KVPLAN_ACTION_PATH:?KVPLAN_ACTION_PATH is not set (the action passes github.action_path)}
elif [[ "$spec" =~ ^[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?$ ]]; then
  spec="kvplan-cli==$spec"
fi
echo "kvplan action: pip install $spec"
"$py" -m pip install --quiet --disable-pip-version-check "$spec"
"$py" -m kvplan.cli --version
