#!/usr/bin/env bash
# One shared CPU environment for many vLLM releases: a base venv (CPU torch + the light
# packages the layout code imports) and, per release, the wheel's Python sources unpacked
# beside it. A release is "selected" by putting its source tree first on PYTHONPATH, so
# switching releases costs an unzip, not a 400 MB install. vLLM's compiled kernels are not
# unpacked: the layout functions the golden runner calls are pure Python.
#
# Usage: scripts/golden/release_env.sh VERSION      # prints the PYTHONPATH for VERSION
# Env:   RELEASE_BASE   base venv            (default <repo>/.golden-venvs/rel-base)
#        RELEASE_SRC    unpacked sources     (default <repo>/.golden-venvs/rel-src)
#        RELEASE_WHEELS downloaded wheels    (default <repo>/.golden-venvs/rel-wheels)
#        KEEP_WHEEL=1   keep the wheel after unpacking (default: delete it, disk is small)
#        TORCH_WHEEL, PYTHON as in setup_venvs.sh
# Output (stdout, last line): PYTHONPATH=<dir>  -- everything else goes to stderr.
# A missing module is pip-installed into the base venv, except vllm itself: a release whose tree does
# not import (0.10.x) fails with a message instead of installing a vllm wheel into the shared base.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VER=${1:?usage: release_env.sh VERSION}
BASE=${RELEASE_BASE:-$REPO/.golden-venvs/rel-base}
SRC=${RELEASE_SRC:-$REPO/.golden-venvs/rel-src}
WHEELS=${RELEASE_WHEELS:-$REPO/.golden-venvs/rel-wheels}
TORCH_WHEEL=${TORCH_WHEEL:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}
PYTHON=${PYTHON:-python3.11}
RUNNER=$REPO/kvplan/verify/vllm_runner.py
LIGHT_PACKAGES=$(sed -n '/^LIGHT_PACKAGES="/,/"$/p' "$REPO/scripts/golden/setup_venvs.sh" | tr -d '"' | sed 's/^LIGHT_PACKAGES=//')
declare -A MODMAP=([yaml]=pyyaml [cv2]=opencv-python-headless [PIL]=pillow [google]=protobuf
  [zmq]=pyzmq [cpuinfo]=py-cpuinfo [pythonjsonlogger]=python-json-logger [dateutil]=python-dateutil
  [attr]=attrs [multipart]=python-multipart [dotenv]=python-dotenv [sklearn]=scikit-learn
  [jwt]=pyjwt [typing_inspection]=typing-inspection [openai_harmony]=openai-harmony)
log() { echo "$@" >&2; }
py=$BASE/bin/python
pip() { "$py" -m pip -q "$@" 2>&1 | grep -v -E "is ignored|requires|incompatible|dependency resolver|^$" >&2 || true; }
mkdir -p "$SRC" "$WHEELS"
if [ ! -x "$py" ]; then
  log "=== base venv $BASE"
  "$PYTHON" -m venv "$BASE"
fi
echo "torch==2.13.0+cpu" > "$BASE/torch-constraint.txt"
"$py" -c "import torch" 2>/dev/null || pip install "$TORCH_WHEEL"
"$py" -c "import packaging" 2>/dev/null || pip install packaging
tree=$SRC/$VER
if [ ! -f "$tree/.done" ]; then
  whl=$(ls "$WHEELS"/vllm-"$VER"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$whl" ]; then
    log "=== downloading vllm==$VER"
    "$py" -m pip download -q --no-deps -d "$WHEELS" "vllm==$VER" 2>&1 | grep -v "is ignored" >&2 || true
    whl=$(ls "$WHEELS"/vllm-"$VER"-*.whl | head -1)
  fi
  rm -rf "$tree" && mkdir -p "$tree"
  "$py" - "$whl" "$tree" <<'PY'
import sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    z.extractall(out, [n for n in z.namelist() if n.endswith((".py", "METADATA", ".json", ".jinja")) or n.endswith("entry_points.txt")])
PY
  touch "$tree/.done"
  [ "${KEEP_WHEEL:-0}" = 1 ] || rm -f "$whl"
fi
export PYTHONPATH=$tree
# Light dependencies with this release's own specifiers (the base venv is shared: a later
# release may move a package; the import check below is what counts).
missing=$("$py" "$REPO/scripts/golden/light_reqs.py" --missing "$LIGHT_PACKAGES")
# shellcheck disable=SC2086
[ -z "$missing" ] || { log "    + $(echo $missing | tr '\n' ' ')"; echo "$missing" | xargs "$py" -m pip install -q -c "$BASE/torch-constraint.txt" 2>&1 | grep -v -E "is ignored|requires|incompatible|dependency resolver|^$" >&2 || true; }
for i in $(seq 1 30); do
  if out=$("$py" "$RUNNER" --check-imports 2>&1); then
    log "vllm $VER: $(echo "$out" | tail -1)"
    echo "PYTHONPATH=$tree"
    exit 0
  fi
  mod=$(echo "$out" | grep -oP "No module named '\K[^'.]+" | tail -1 || true)
  if [ -z "$mod" ]; then
    echo "$out" | tail -15 >&2
    log "!!! vllm $VER: imports fail for a reason other than a missing module"
    exit 1
  fi
  pkg=${MODMAP[$mod]:-$mod}
  if [ "$pkg" = vllm ]; then
    # the release's own tree lacks a vllm module it imports (0.10.x: an older package layout): installing
    # the vllm wheel would put one release into the base venv every release shares, shadowing the trees
    echo "$out" | tail -5 >&2
    log "!!! vllm $VER: its sources import a vllm module the unpacked tree ($tree) lacks; release_env.sh never"
    log "    pip-installs vllm into the shared base venv ($BASE). Use a venv of its own (setup_venvs.sh)."
    exit 1
  fi
  log "    + $pkg (missing module $mod)"
  pip install -c "$BASE/torch-constraint.txt" "$pkg"
done
log "!!! vllm $VER: gave up after 30 installs"
exit 1
