"""Integrity checks for the bundled model-config catalog (configs/), no network.

- every INDEX.json entry points at a file whose sha256 and size match;
- every config parses with Python's json (Nemotron-H carries the token `Infinity`, as on HF);
- genuine files are byte-identical to ../shared/configs when that directory exists
  (CI has no ../shared, so that check is skipped there); a genuine file that is not in the shared
  catalog records the upstream git blob id, and its bytes must hash to it (everywhere, CI included);
- an ``hf_quant_config.json`` beside a config (ModelOpt <= 0.29 checkpoints) is indexed with its
  size and sha256 (and git blob when genuine);
- provenance is genuine|reconstructed, and reconstructed entries cite their sources;
- every model the catalog promises is present.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIGS_DIR = REPO_ROOT / "configs"
INDEX_PATH = CONFIGS_DIR / "INDEX.json"
SHARED_CONFIGS_DIR = REPO_ROOT.parent / "shared" / "configs"

REQUIRED_IDS = {
    # gpt-oss targets and their drafters (EAGLE3 x2, 4-layer P-EAGLE)
    "openai/gpt-oss-20b",
    "openai/gpt-oss-120b",
    "sgl-project/SpecForge--gpt-oss-20B-eagle3",
    "sgl-project/SpecForge--gpt-oss-120B-eagle3",
    "amazon/GPT-OSS-20B-P-EAGLE",
    # Gemma 2 / 3 / 4
    "google/gemma-2-9b",
    "google/gemma-3-1b-it",
    "google/gemma-3-4b-it",
    "google/gemma-3-12b-it",
    "google/gemma-3-27b-it",
    "google/gemma-4-26B-A4B",
    # Llama 3.1 + its EAGLE3 head, Llama 4
    "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-70B",
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    # Mistral family, Phi-3
    "mistralai/Mistral-7B-v0.1",
    "mistralai/Mixtral-8x7B-v0.1",
    "microsoft/Phi-3-mini-4k-instruct",
    # Qwen
    "Qwen/Qwen2.5-7B",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-Next-80B-A3B-Thinking",
    "Qwen/Qwen3.5-27B",
    # MLA and other hybrids
    "deepseek-ai/DeepSeek-V3",
    "deepseek-ai/DeepSeek-R1",
    "deepseek-ai/DeepSeek-V3.2",
    "moonshotai/Kimi-K2-Instruct",
    "nvidia/Nemotron-H-56B-Base-8K",
    "XiaomiMiMo/MiMo-V2-Flash",
    "MiniMaxAI/MiniMax-M2.5",
    "ai21labs/Jamba-v0.1",
    # instruct / -it variants the vLLM recipes serve (scripts/catalog_variants.py)
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "google/gemma-4-26B-A4B-it",
    "mistralai/Mixtral-8x7B-Instruct-v0.1",
    # speculators-format EAGLE-3 heads the vLLM docs, recipes and speculators docs serve
    # (scripts/catalog_speculators.py), and the quantized Nemotron-3-Nano checkpoints
    "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
    "RedHatAI/Qwen3-8B-speculator.eagle3",
    "RedHatAI/gpt-oss-20b-speculator.eagle3",
    "RedHatAI/Qwen3-32B-speculator.eagle3",
    "RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4",
}

PROVENANCES = {"genuine", "reconstructed"}
ROLES = {"target", "drafter"}


def _load_index() -> list[dict]:
    return json.loads(INDEX_PATH.read_text(encoding="utf-8"))


INDEX = _load_index()
ENTRY_IDS = [entry["model_id"] for entry in INDEX]


def test_index_is_a_list_with_unique_ids_and_files() -> None:
    assert isinstance(INDEX, list) and INDEX
    assert len(set(ENTRY_IDS)) == len(ENTRY_IDS)
    files = [entry["file"] for entry in INDEX]
    assert len(set(files)) == len(files)


@pytest.mark.parametrize("entry", INDEX, ids=ENTRY_IDS)
def test_entry_file_exists_and_hash_matches(entry: dict) -> None:
    assert entry["file"] == f"{entry['model_id']}/config.json"
    path = CONFIGS_DIR / entry["file"]
    assert path.is_file(), f"missing {path}"
    data = path.read_bytes()
    assert len(data) == entry["bytes"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]


@pytest.mark.parametrize("entry", INDEX, ids=ENTRY_IDS)
def test_entry_fields(entry: dict) -> None:
    assert entry["provenance"] in PROVENANCES
    assert entry["role"] in ROLES
    assert entry["family"]
    if entry["role"] == "drafter":
        assert "target" in entry
    if entry["provenance"] == "reconstructed":
        assert entry["sources"], "a reconstructed config must cite its sources"
        for source in entry["sources"]:
            assert source["fields"] and source["fact"] and source["cite"]
        assert entry["note"]
    else:
        for key in ("source_repo", "commit", "path", "fidelity", "confidence"):
            assert key in entry


def test_every_config_file_is_indexed() -> None:
    on_disk = {p.relative_to(CONFIGS_DIR).as_posix() for p in CONFIGS_DIR.rglob("config.json")}
    assert on_disk == {entry["file"] for entry in INDEX}


@pytest.mark.parametrize("entry", INDEX, ids=ENTRY_IDS)
def test_config_parses_as_json(entry: dict) -> None:
    # Python's json accepts the non-standard `Infinity` that Nemotron-H uses.
    config = json.loads((CONFIGS_DIR / entry["file"]).read_text(encoding="utf-8"))
    assert isinstance(config, dict)
    assert config.get("architectures"), "every bundled config names its architecture"
    if config.get("speculators_model_type"):  # speculators format: no top-level model_type (vLLM reads the layer's)
        assert "model_type" not in config and config["transformer_layer_config"]["model_type"]
    else:
        assert config.get("model_type")


GENUINE = [entry for entry in INDEX if entry["provenance"] == "genuine"]
# genuine copies fetched after the shared catalog was made: checked by their upstream git blob id
BLOB_CHECKED = [entry for entry in GENUINE if "git_blob" in entry]


def git_blob_sha1(data: bytes) -> str:
    """What ``git hash-object`` prints for a file with these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_git_blob_sha1_matches_git() -> None:
    # `printf 'hello\n' | git hash-object --stdin`
    assert git_blob_sha1(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


@pytest.mark.parametrize("entry", BLOB_CHECKED, ids=[entry["model_id"] for entry in BLOB_CHECKED])
def test_genuine_copy_is_the_upstream_blob(entry: dict) -> None:
    for item in (entry, entry.get("hf_quant_config") or {}):
        if item:
            assert git_blob_sha1((CONFIGS_DIR / item["file"]).read_bytes()) == item["git_blob"], item["file"]
            assert item["path"] and entry["source_repo"] and len(entry["commit"]) == 40


QUANT_FILES = [entry for entry in INDEX if "hf_quant_config" in entry]


@pytest.mark.parametrize("entry", QUANT_FILES, ids=[entry["model_id"] for entry in QUANT_FILES])
def test_hf_quant_config_is_indexed(entry: dict) -> None:
    q = entry["hf_quant_config"]
    assert q["file"] == f"{entry['model_id']}/hf_quant_config.json"
    data = (CONFIGS_DIR / q["file"]).read_bytes()
    assert len(data) == q["bytes"] and hashlib.sha256(data).hexdigest() == q["sha256"]
    assert json.loads(data)["quantization"]["kv_cache_quant_algo"] == "FP8"


def test_every_hf_quant_config_is_indexed() -> None:
    on_disk = {p.relative_to(CONFIGS_DIR).as_posix() for p in CONFIGS_DIR.rglob("hf_quant_config.json")}
    assert on_disk == {entry["hf_quant_config"]["file"] for entry in QUANT_FILES}


@pytest.mark.skipif(not SHARED_CONFIGS_DIR.is_dir(), reason="no ../shared/configs (e.g. CI)")
@pytest.mark.parametrize("entry", [e for e in GENUINE if "git_blob" not in e],
                         ids=[e["model_id"] for e in GENUINE if "git_blob" not in e])
def test_genuine_file_is_byte_identical_to_shared(entry: dict) -> None:
    shared = SHARED_CONFIGS_DIR / entry["file"]
    assert shared.is_file(), f"{shared} not in ../shared/configs"
    assert (CONFIGS_DIR / entry["file"]).read_bytes() == shared.read_bytes()


@pytest.mark.skipif(not SHARED_CONFIGS_DIR.is_dir(), reason="no ../shared/configs (e.g. CI)")
def test_every_shared_config_is_bundled_as_genuine() -> None:
    shared_index = json.loads((SHARED_CONFIGS_DIR / "INDEX.json").read_text(encoding="utf-8"))
    ours = {entry["model_id"]: entry for entry in INDEX}
    for shared_entry in shared_index:
        entry = ours[shared_entry["model_id"]]
        assert entry["provenance"] == "genuine"
        for key, value in shared_entry.items():
            assert entry[key] == value, f"{shared_entry['model_id']}: {key} differs from shared INDEX"


def test_required_ids_present() -> None:
    missing = REQUIRED_IDS - set(ENTRY_IDS)
    assert not missing, f"catalog lacks {sorted(missing)}"


def _text_config(config: dict) -> dict:
    return config.get("text_config", config)


def _load(model_id: str) -> dict:
    return json.loads((CONFIGS_DIR / model_id / "config.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("model_id", "num_layers", "num_kv_heads", "head_dim", "window", "num_full"),
    [
        # (i+1) % 6 == 0 is full: 26 -> 4, 34 -> 5, 48 -> 8, 62 -> 10
        ("google/gemma-3-1b-it", 26, 1, 256, 512, 4),
        ("google/gemma-3-4b-it", 34, 4, 256, 1024, 5),
        ("google/gemma-3-12b-it", 48, 8, 256, 1024, 8),
        ("google/gemma-3-27b-it", 62, 16, 128, 1024, 10),
    ],
)
def test_gemma3_reconstructions_spell_out_the_layout(
    model_id: str, num_layers: int, num_kv_heads: int, head_dim: int, window: int, num_full: int
) -> None:
    text = _text_config(_load(model_id))
    assert text["model_type"] == "gemma3_text"
    assert text["num_hidden_layers"] == num_layers
    assert text["num_key_value_heads"] == num_kv_heads
    assert text["head_dim"] == head_dim
    assert text["sliding_window"] == window
    assert text["sliding_window_pattern"] == 6
    expected = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(num_layers)]
    assert text["layer_types"] == expected
    assert expected.count("full_attention") == num_full


def test_peagle_drafter_is_four_full_layers_like_gpt_oss_full() -> None:
    drafter = _load("amazon/GPT-OSS-20B-P-EAGLE")
    target = _load("openai/gpt-oss-20b")
    assert drafter["architectures"] == ["LlamaForCausalLMEagle3"]
    assert drafter["num_hidden_layers"] == 4
    assert "layer_types" not in drafter and "sliding_window" not in drafter
    # Same KV geometry as gpt-oss' full layers, so vLLM puts the 4 layers in the full bucket.
    assert (drafter["num_key_value_heads"], drafter["head_dim"]) == (
        target["num_key_value_heads"],
        target["head_dim"],
    ) == (8, 64)


def test_llama4_scout_no_rope_layers() -> None:
    text = _text_config(_load("meta-llama/Llama-4-Scout-17B-16E-Instruct"))
    assert text["attention_chunk_size"] == 8192
    no_rope = text["no_rope_layers"]
    assert no_rope == [0 if (i + 1) % 4 == 0 else 1 for i in range(48)]
    assert no_rope.count(0) == 12  # 12 full (NoPE) + 36 chunked


def test_jamba_attention_layers() -> None:
    config = _load("ai21labs/Jamba-v0.1")
    attention = [
        i
        for i in range(config["num_hidden_layers"])
        if i % config["attn_layer_period"] == config["attn_layer_offset"]
    ]
    assert attention == [4, 12, 20, 28]


VARIANTS = [entry for entry in INDEX if entry.get("reconstructed_from")]


@pytest.mark.parametrize("entry", VARIANTS, ids=[entry["model_id"] for entry in VARIANTS])
def test_variants_differ_from_their_genuine_sibling_only_in_cited_fields(entry: dict) -> None:
    sibling = next(e for e in INDEX if e["model_id"] == entry["reconstructed_from"])
    assert sibling["provenance"] == "genuine"
    ours, theirs = _load(entry["model_id"]), _load(sibling["model_id"])
    changed = {k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k)}
    cited = {f for source in entry["sources"] for f in source["fields"]}
    assert changed <= cited, f"{entry['model_id']}: {sorted(changed - cited)} changed without a cited fact"
    if not changed:  # a byte copy
        assert entry["sha256"] == sibling["sha256"]
    if "hf_quant_config" in entry:  # its hf_quant_config.json differs from the sibling's only where listed
        mine = json.loads((CONFIGS_DIR / entry["hf_quant_config"]["file"]).read_text())["quantization"]
        base = json.loads((CONFIGS_DIR / sibling["hf_quant_config"]["file"]).read_text())["quantization"]
        diff = {f"quantization.{k}" for k in set(mine) | set(base) if mine.get(k) != base.get(k)}
        assert diff == set(entry["hf_quant_config"]["changed"])
        cited_quant = {f.removeprefix("hf_quant_config.json ") for f in cited if f.startswith("hf_quant_config.json ")}
        assert diff <= cited_quant


def test_speculators_configs_name_their_catalog_verifier() -> None:
    # each bundled speculators head names a verifier the catalog has, and its draft layer's KV geometry
    # (KV heads x head size) equals the verifier's, so the head joins the verifier's full-attention bucket
    for entry in INDEX:
        config = _load(entry["model_id"])
        if "speculators_model_type" not in config:
            continue
        verifier = config["speculators_config"]["verifier"]["name_or_path"]
        assert verifier == entry["target"] and verifier in ENTRY_IDS
        layer, target = config["transformer_layer_config"], _text_config(_load(verifier))
        target_hd = target.get("head_dim") or target["hidden_size"] // target["num_attention_heads"]
        assert (layer["num_hidden_layers"], layer["num_key_value_heads"], layer["head_dim"]) == (
            1, target["num_key_value_heads"], target_hd)


def test_modelopt_export_keeps_the_bf16_config():
    # The fact behind the FP8 reconstruction: the genuine NVFP4 config.json (a ModelOpt 0.29 export) has
    # exactly the BF16 config's values (only its formatting differs); the quantization is in
    # hf_quant_config.json.
    nano = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B"
    assert _load(f"{nano}-NVFP4") == _load(f"{nano}-BF16")
    assert "quantization_config" not in _load(f"{nano}-NVFP4")


def test_qwen3_32b_speculator_equals_the_public_fixture():
    # The sglang CPU test TestEagle3SpeculatorConfigLoading writes a Qwen/Qwen3-32B Eagle3Speculator config
    # (speculators_version 1); its layer values are the verifier's, which is how the bundled head is built.
    layer = _load("RedHatAI/Qwen3-32B-speculator.eagle3")["transformer_layer_config"]
    fixture = {"head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "intermediate_size": 25600,
               "max_position_embeddings": 40960, "model_type": "llama", "num_attention_heads": 64,
               "num_hidden_layers": 1, "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
               "vocab_size": 151936}
    assert layer == fixture
    assert _load("RedHatAI/Qwen3-32B-speculator.eagle3")["draft_vocab_size"] == 32000
