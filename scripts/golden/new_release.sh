#!/usr/bin/env bash
# Support the next vLLM release: one command, then whatever code change its output reveals.
#
# Usage: scripts/golden/new_release.sh VERSION [BASE_RELEASE]
#
#   1. builds VERSION's environment (release_env.sh: base venv + the wheel's sources);
#   2. diffs VERSION's KV-layout modules against BASE_RELEASE's (default: the newest release
#      kvplan checked that is older than VERSION), by file and by function (diff_layout.py),
#      and prints the behaviour markers that moved (fingerprint.py), then every default of every
#      vllm.config class (fields and ClassVar constants) that changed (config_defaults.py, saved
#      to tests/golden/config_defaults/BASE__VERSION.txt);
#   3. regenerates the goldens for VERSION (make_goldens.py, written to tests/golden);
#   4. prints which fields of which cases changed against BASE_RELEASE's goldens
#      (compare_goldens.py) and runs kvplan's golden test on VERSION's files.
#
# Then: add VERSION to kvplan/engines/vllm/releases.py (VERSIONS, GOLDEN_RELEASES), give it
# an era in eras.CHAIN if a behaviour moved, regenerate every generated file
# (`python scripts/regenerate.py --release VERSION`, then `python scripts/regenerate.py --check`),
# and rerun `python -m pytest tests/test_golden.py tests/test_releases.py`. See docs/new-release.md.
# Env: RELEASE_BASE, RELEASE_SRC, RELEASE_WHEELS as in release_env.sh.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VER=${1:?usage: new_release.sh VERSION [BASE_RELEASE]}
export PYTHONPATH=$REPO
SRC=${RELEASE_SRC:-$REPO/.golden-venvs/rel-src}
BASE=${2:-$(python - "$VER" <<'PY'
import sys
from kvplan.engines.vllm.releases import GOLDEN_RELEASES, version_key
older = [r for r in GOLDEN_RELEASES if version_key(r) < version_key(sys.argv[1])]
print(max(older, key=version_key))
PY
)}
echo "== 1. environment for vllm $VER (base release for the diff: $BASE)"
"$REPO/scripts/golden/release_env.sh" "$VER" >/dev/null
[ -f "$SRC/$BASE/.done" ] || "$REPO/scripts/golden/release_env.sh" "$BASE" >/dev/null
echo
echo "== 2. KV-layout modules, $BASE -> $VER (by file and function; comments and docstrings ignored)"
python "$REPO/scripts/golden/diff_layout.py" "$SRC/$BASE" "$SRC/$VER"
echo
echo "== behaviour markers that moved ($BASE -> $VER)"
python - "$SRC" "$BASE" "$VER" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, str(Path("scripts/golden").resolve()))
from fingerprint import fingerprint
src, base, ver = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
a, b = fingerprint(src / base), fingerprint(src / ver)
moved = [k for k in a if a[k] != b[k]]
for k in moved:
    print(f"  {k}: {a[k]} -> {b[k]}")
print(f"  ({len(moved)} of {len(a)} markers moved)")
PY
echo
echo "== 2b. config defaults that changed ($BASE -> $VER): every field default and ClassVar of vllm.config.*"
mkdir -p "$REPO/tests/golden/config_defaults"
python "$REPO/scripts/golden/config_defaults.py" "$BASE" "$VER" | tee "$REPO/tests/golden/config_defaults/${BASE}__${VER}.txt"
echo
echo "== 3. goldens for vllm $VER"
python "$REPO/scripts/golden/make_goldens.py" --releases "$VER" 2>&1 | grep -v "^  tests/golden" || true
echo "== 3b. engine defaults with options unset (tests/golden/defaults/$VER.json: EngineArgs -> create_engine_config"
echo "       per model and GPU class, the backend and update_block_size_for_backend)"
python "$REPO/scripts/golden/make_goldens.py" --defaults --releases "$VER" 2>&1 || true
echo
echo "== 4. golden fields that changed, $BASE -> $VER"
python "$REPO/scripts/golden/compare_goldens.py" "$BASE" "$VER"
echo
echo "== kvplan against vllm $VER's goldens"
python -m pytest -q -p no:cacheprovider "$REPO/tests/test_golden.py" -k "__$VER" 2>&1 | tail -15 || true
echo
echo "== next: add $VER to versions.py (VERSIONS, GOLDEN_RELEASES), then regenerate every generated file:"
echo "   RELEASE_SRC=$SRC python scripts/regenerate.py --release $VER && python scripts/regenerate.py --check"
