#!/usr/bin/env bash
# Create one virtual env per vLLM release under .golden-venvs/vllm-<version>,
# with the CPU torch that lies on this machine and just enough light packages to
# import vLLM's KV-cache layout code (no CUDA, no model weights, no GPU).
#
# Usage: scripts/golden/setup_venvs.sh [VERSION ...]
#        (default: every release in RELEASES below)
# Env:   GOLDEN_VENVS  (default: <repo>/.golden-venvs)
#        TORCH_WHEEL   (default: the CPU torch 2.13.0 wheel in /opt/wheels)
#        PYTHON        (default: python3.11)
#
# vLLM is always installed with --no-deps and torch is pinned with a constraint
# file, so pip can never pull a CUDA torch. The light dependencies are taken
# from vLLM's own Requires-Dist (same version specifiers) for the names in
# LIGHT_PACKAGES; any module still missing after that is installed by a short
# import-and-retry loop (its version is whatever pip resolves).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
VENVS=${GOLDEN_VENVS:-$REPO/.golden-venvs}
TORCH_WHEEL=${TORCH_WHEEL:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}
PYTHON=${PYTHON:-python3.11}
RUNNER=$REPO/kvplan/verify/vllm_runner.py

# 0.11.2: last release before PR #29303 (group size = min, no threshold)
# 0.17.1: threshold 1.25;  0.18.0: threshold 1.5, first-group admission
# 0.33.0: latest; grouping in vllm/v1/core/kv_cache_planning.py
RELEASES=(0.11.2 0.17.1 0.18.0 0.33.0)

# Distribution names (as vLLM spells them in Requires-Dist) that the layout
# code's import chain needs. Everything else (fastapi, ray, flashinfer, CUDA
# kernels, ...) is deliberately left out.
LIGHT_PACKAGES="numpy packaging pydantic regex psutil cbor2 huggingface_hub huggingface-hub
transformers tokenizers gguf aiohttp pyzmq pillow pybase64 cachetools prometheus_client
prometheus-client msgspec cloudpickle py-cpuinfo openai-harmony openai llguidance diskcache
xgrammar blake3 protobuf pyyaml requests tqdm typing_extensions filelock sentencepiece
einops watchfiles python-json-logger setproctitle partial-json-parser ijson"

# import name -> distribution name, for the retry loop
declare -A MODMAP=([yaml]=pyyaml [cv2]=opencv-python-headless [PIL]=pillow [google]=protobuf
  [zmq]=pyzmq [cpuinfo]=py-cpuinfo [pythonjsonlogger]=python-json-logger [dateutil]=python-dateutil
  [attr]=attrs [multipart]=python-multipart [dotenv]=python-dotenv [sklearn]=scikit-learn
  [jwt]=pyjwt [typing_inspection]=typing-inspection [openai_harmony]=openai-harmony)

setup_one() {
  local ver=$1 venv=$VENVS/vllm-$1
  echo "=== vllm $ver -> $venv"
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  local py=$venv/bin/python pip="$venv/bin/python -m pip"
  local cons=$venv/torch-constraint.txt
  # Never let a dependency replace the CPU torch.
  echo "torch==2.13.0+cpu" > "$cons"
  if ! "$py" -c "import torch" 2>/dev/null; then
    $pip install -q "$TORCH_WHEEL" 2>&1 | grep -v "is ignored" || true
  fi
  if [ "$("$py" -c 'import importlib.metadata as m; print(m.version("vllm"))' 2>/dev/null)" != "$ver" ]; then
    $pip install -q --no-deps "vllm==$ver" 2>&1 | grep -v "is ignored" || true
  fi
  # Light dependencies with vLLM's own version specifiers.
  "$py" -c "import packaging" 2>/dev/null || $pip install -q packaging 2>&1 | grep -v "is ignored" || true
  local reqs
  reqs=$("$py" "$REPO/scripts/golden/light_reqs.py" "$LIGHT_PACKAGES")
  # shellcheck disable=SC2086
  echo "$reqs" | xargs $pip install -q -c "$cons" 2>&1 | grep -v -E "is ignored|requires|incompatible|dependency resolver|^$" || true
  # Retry loop: install whatever module the runner's imports still miss.
  local i out mod pkg
  for i in $(seq 1 30); do
    if out=$("$py" "$RUNNER" --check-imports 2>&1); then
      echo "$out" | tail -1
      return 0
    fi
    mod=$(echo "$out" | grep -oP "No module named '\K[^'.]+" | tail -1 || true)
    if [ -z "$mod" ]; then
      echo "$out" | tail -20
      echo "!!! vllm $ver: imports fail for a reason other than a missing module" >&2
      return 1
    fi
    pkg=${MODMAP[$mod]:-$mod}
    echo "    + $pkg (missing module $mod)"
    $pip install -q -c "$cons" "$pkg" 2>&1 | grep -v -E "is ignored|requires|incompatible|dependency resolver|^$" || true
  done
  echo "!!! vllm $ver: gave up after 30 installs" >&2
  return 1
}

mkdir -p "$VENVS"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("${RELEASES[@]}")
status=0
for v in "${versions[@]}"; do
  setup_one "$v" || status=1
done
exit $status
