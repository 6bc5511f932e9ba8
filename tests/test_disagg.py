"""Prefill/decode pairs (issue 36): each side simulated as ``kvplan vllm`` does, then what the KV connector
requires of the two (``kvplan.engines.vllm.disagg``: vLLM 0.34.0's NixlConnector, pull mode, the decode
worker local in its checks).

The TP and block-size rules are checked against the wheel's own ``TransferTopology`` (the hook goldens
``nixl_topology:*`` in tests/golden/hooks/0.34.0.json, run by make_goldens.py --hooks); the other rules'
messages are vLLM's, cited by file and line in the module."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm.disagg import PdSide, pair_checks

app = ensure_registered()
runner = CliRunner()
DATA = Path(__file__).parent / "data" / "pd"
HOOKS = json.loads((Path(__file__).parent / "golden" / "hooks" / "0.34.0.json").read_text())
LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def nixl(role: str, **extra) -> str:
    return json.dumps({"kv_connector": "NixlConnector", "kv_role": role,
                       **({"kv_connector_extra_config": extra} if extra else {})})


def line(*flags: str, model: str = LLAMA, role: str = "kv_both", **extra) -> str:
    return f"vllm serve {model} --kv-cache-memory-bytes 20GiB --kv-transfer-config '{nixl(role, **extra)}' " + \
        " ".join(flags)


def run_pair(prefill: str, decode: str, *options: str) -> tuple[int, dict]:
    r = runner.invoke(app, ["vllm", "--format", "json", *options, "--line", prefill, "--decode-line", decode])
    return r.exit_code, json.loads(r.stdout) if r.stdout.startswith("{") else {"output": r.output}


BASE = PdSide(role="prefill", kv_connector="NixlConnector", kv_role="kv_both", release="0.34.0", model=LLAMA,
              dtype="bfloat16", num_kv_heads=8, head_size=128, num_hidden_layers=32, attention_backend="FLASH_ATTN",
              cache_dtype="auto", hybrid_kv_cache_manager=True, speculator=None, transfer_mode="pull",
              enforce_handshake_compat=True, tensor_parallel_size=1, decode_context_parallel_size=1, block_size=64,
              use_mla=False, has_mamba=False, kv_cache_layout="LBHNC")


def _hook_cases():
    for c in HOOKS["cases"]:
        if c["case"]["kind"] == "nixl_topology":
            yield pytest.param(c["case"], c["result"], id=c["case"]["case"])


@pytest.mark.parametrize("case, result", list(_hook_cases()))
def test_tp_and_block_rules_match_the_wheels_transfer_topology(case, result):
    """The wheel's TransferTopology (decode local) either answers a ratio or raises its AssertionError;
    kvplan's rules pass or fail with the same text. (A block-contiguous layout, so that a TP ratio alone
    is not refused by the layout rule, which the topology does not hold.)"""
    prefill = replace(BASE, tensor_parallel_size=case["remote_tp"], block_size=case["remote_block"],
                      num_kv_heads=case["total_num_kv_heads"], use_mla=case["is_mla"])
    decode = replace(prefill, role="decode", tensor_parallel_size=case["local_tp"], block_size=case["local_block"])
    _, checks = pair_checks(prefill, decode)
    by_rule = {c.rule: c for c in checks}
    for name, rule in (("tp_ratio", "TP sizes divide"), ("block_size_ratio", "block sizes: decode a multiple of prefill")):
        theirs = result[name]
        if isinstance(theirs, dict):  # the wheel raised
            assert not by_rule[rule].ok and by_rule[rule].error == theirs["error"]["message"]
        elif rule in by_rule:  # an earlier rule may have stopped the handshake before this one
            assert by_rule[rule].ok


def test_public_nixl_pair_passes():
    """tlrmchlsmth/pd_examples' Justfile: the same line on both sides (kv_both): the pair's rules pass."""
    p, d = (DATA / "pd_examples_justfile_prefill.txt").read_text(), (DATA / "pd_examples_justfile_decode.txt").read_text()
    code, out = run_pair(p, d, "--gpu", "H100-80GB")
    assert code == 0 and out["outcome"]["starts"]
    assert out["pair"]["kv_connector"] == "NixlConnector" and out["pair"]["compatible"] is True
    assert [r["rule"] for r in out["pair"]["rules"]] == [
        "compatibility hash", "TP sizes divide", "DCP sizes divide", "replicated KV heads read by a smaller TP",
        "block sizes: decode a multiple of prefill", "same KV cache layout"]
    assert out["prefill"]["memory"]["num_blocks"] == out["decode"]["memory"]["num_blocks"]


def test_public_mooncake_pair_is_simulated_but_its_rules_are_not_modelled():
    p, d = (DATA / "mooncake_readme_prefill.txt").read_text(), (DATA / "mooncake_readme_decode.txt").read_text()
    code, out = run_pair(p, d, "--gpu", "H100-80GB")
    assert code == 0
    assert out["pair"]["modelled"] is False and out["pair"]["compatible"] is None
    assert "not modelled" in out["pair"]["note"]


def test_block_sizes_that_do_not_divide_fail_with_vllms_assertion_and_a_verified_fix():
    code, out = run_pair(line("--block-size", "128", role="kv_producer"), line(role="kv_consumer"))
    assert code == 3
    o = out["outcome"]
    assert (o["stage"], o["error_type"]) == ("kv_connector", "AssertionError")
    assert o["error"] == "Local block size 64 is not divisible by remote block size 128 or vice versa."
    assert out["pair"]["fix"] == o["fix"] == "--block-size 128 on both sides"
    # the fix, applied: passes
    code, out = run_pair(line("--block-size", "128"), line("--block-size", "128"))
    assert code == 0 and out["pair"]["compatible"]


def test_a_different_kv_cache_dtype_breaks_the_compatibility_hash():
    code, out = run_pair(line("--kv-cache-dtype", "fp8"), line())
    assert code == 3
    first_failed = next(r for r in out["pair"]["rules"] if not r["ok"])
    assert first_failed["rule"] == "compatibility hash (cache_dtype)"
    assert out["outcome"]["error"].startswith("NIXL compatibility hash mismatch.")
    # enforce_handshake_compat false on the decode side (the one that checks) lets the handshake go on
    code, out = run_pair(line("--kv-cache-dtype", "fp8"), line(enforce_handshake_compat=False))
    assert out["pair"]["rules"][0]["ok"]


def test_heterogeneous_tp_needs_a_block_contiguous_layout():
    """Llama (8 KV heads) prefilled on TP 1, decoded on TP 2: heads split across the decode ranks; kvplan's
    0.34 caches are LBNHC (heads not contiguous within a block), so vLLM refuses the handshake."""
    code, out = run_pair(line(), line("--tensor-parallel-size", "2"))
    assert code == 3
    assert out["outcome"]["error"] == ("Heterogeneous TP head-dimension splitting requires contiguous heads. Use a "
                                       "block-contiguous layout (e.g. LBHNC) on the prefill side.")


def test_roles_the_wrong_way_round_are_refused_in_one_line():
    r = runner.invoke(app, ["vllm", "--line", line(role="kv_consumer"), "--decode-line", line(role="kv_producer")])
    assert r.exit_code == 1
    assert "give the kv_producer line as --line" in r.output


def test_decode_line_needs_line():
    r = runner.invoke(app, ["vllm", "--decode-line", line()])
    assert r.exit_code == 2


def test_public_dp_pair_and_the_decode_pools_in_flight_loads():
    """yeqcharlotte/router's Llama-3.1-8B pair (DP 2 each side, the hybrid manager off on both): the pair
    passes; with --max-num-inflight-kv-loads 2 on the decode line, two max-length loads hold two requests'
    blocks, so the running batch keeps the decode pool's max_concurrency minus 2."""
    p, d = (DATA / "router_llama3.1_prefill.txt").read_text(), (DATA / "router_llama3.1_decode.txt").read_text()
    code, out = run_pair(p, d.rstrip() + " --max-num-inflight-kv-loads 2", "--gpu", "H100-80GB")
    assert code == 0 and out["pair"]["compatible"] is True
    assert out["decode"]["totals"]["engines"] == 2
    pair = out["pair"]
    assert pair["decode_max_num_inflight_kv_loads"] == 2
    assert pair["decode_running_concurrency_with_loads"] == round(out["decode"]["memory"]["max_concurrency"] - 2, 2)


def test_a_dynamo_graphs_prefill_and_decode_workers_are_a_pair():
    """ai-dynamo/dynamo's disagg.yaml (tests/data/manifests): its VllmPrefillWorker and VllmDecodeWorker are read
    as the pair (--file F --pd) and both simulated; Dynamo installs the KV connector through its own flags, which
    kvplan does not read, so the pair's rules are said to be unchecked rather than passed. Qwen3-0.6B's genuine
    config is the budget corpus's copy (tests/logs/budget/configs)."""
    r = runner.invoke(app, ["vllm", "--format", "json", "--gpu", "H100-80GB", "--model-map",
                            "Qwen/Qwen3-0.6B=tests/logs/budget/configs/Qwen/Qwen3-0.6B", "--file",
                            "tests/data/manifests/dynamo-vllm-disagg.yaml", "--pd"])
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["prefill"]["serve"]["manifest"].endswith(":40") and out["decode"]["serve"]["manifest"].endswith(":19")
    assert out["pair"]["modelled"] is False and out["pair"]["compatible"] is None
    assert "not checked" in out["pair"]["note"]


def test_pd_needs_a_file_with_one_worker_per_role(tmp_path):
    r = runner.invoke(app, ["vllm", "--file", "tests/data/manifests/vllm-docs-k8s-deployment.yaml", "--pd"])
    assert r.exit_code == 1 and "needs one vLLM container named for each role" in r.output
    r = runner.invoke(app, ["vllm", "--pd", "--line", "vllm serve x"])
    assert r.exit_code == 2


def _pd_lines() -> tuple[str, str]:
    return ((DATA / "pd_examples_justfile_prefill.txt").read_text().strip(),
            (DATA / "pd_examples_justfile_decode.txt").read_text().strip())


def test_decode_gpu_sizes_the_decode_side_on_its_own_card():
    """--gpu is the prefill side's card, --decode-gpu the decode side's: each side is the single-engine
    simulation on its card (the same num_blocks as `kvplan vllm --gpu CARD --line SIDE`), and a pair of
    Hopper cards (H100 prefill, H200 decode) picks FLASH_ATTN on both: the pair passes."""
    prefill, decode = _pd_lines()
    code, d = run_pair(prefill, decode, "--gpu", "H100-80GB", "--decode-gpu", "H200")
    assert code == 0 and d["pair"]["compatible"] is True
    for side, card, text in (("prefill", "H100-80GB", prefill), ("decode", "H200", decode)):
        r = runner.invoke(app, ["vllm", "--format", "json", "--gpu", card, "--line", text])
        alone = json.loads(r.stdout)
        assert d[side]["memory"]["num_blocks"] == alone["memory"]["num_blocks"]
    assert d["decode"]["memory"]["num_blocks"] > d["prefill"]["memory"]["num_blocks"]


def test_decode_gpu_of_another_architecture_changes_the_attention_backend_in_the_hash():
    """0.34.0 picks the attention backend by device (FLASH_ATTN on Hopper, FLASHINFER on Blackwell), and the
    backend's name is a factor of NixlConnector's compatibility hash (nixl/metadata.py:149-210): an H100
    prefill cannot hand KV to a B200 decode without the same --attention-backend on both."""
    prefill, decode = _pd_lines()
    code, d = run_pair(prefill, decode, "--gpu", "H100-80GB", "--decode-gpu", "B200")
    assert code == 3
    assert d["pair"]["rules"][0]["rule"] == "compatibility hash (attn_backend_name)"
    assert (d["pair"]["rules"][0]["prefill"], d["pair"]["rules"][0]["decode"]) == (
        "attn_backend_name=FLASH_ATTN", "attn_backend_name=FLASHINFER")
    assert d["outcome"]["error"].startswith("NIXL compatibility hash mismatch.")


def test_decode_gpu_needs_the_prefill_card_and_a_pair():
    prefill, decode = _pd_lines()
    r = runner.invoke(app, ["vllm", "--decode-gpu", "H200", "--line", prefill, "--decode-line", decode])
    assert r.exit_code == 1 and "--decode-gpu: give the prefill side's card with --gpu too" in r.output
    r = runner.invoke(app, ["vllm", "--gpu", "H100-80GB", "--decode-gpu", "H200", "--line", prefill])
    assert r.exit_code == 2 and "--decode-gpu goes with --decode-line or --pd" in r.output


def mooncake(role: str) -> str:
    return json.dumps({"kv_connector": "MooncakeConnector", "kv_role": role})


def test_mooncake_pair_needs_the_same_block_size():
    """vLLM 0.34.0's own MooncakeConnector (no kv_connector_module_path): one KV region of Llama-3.1-8B on TP 1
    holds block x 8 KV heads x 128 x 2 bytes: 16 x 2,048 = 32,768 on the prefill side, 64 x 2,048 = 131,072
    on the decode side; the same TP needs equal lengths (mooncake_connector.py:365-371)."""
    p = f"vllm serve {LLAMA} --kv-cache-memory-bytes 20GiB --block-size 16 --kv-transfer-config '{mooncake('kv_producer')}'"
    d = f"vllm serve {LLAMA} --kv-cache-memory-bytes 20GiB --kv-transfer-config '{mooncake('kv_consumer')}'"
    code, out = run_pair(p, d)
    assert code == 3 and out["pair"]["modelled"] is True
    assert out["outcome"]["error"] == ("Mooncake KV region length mismatch for homogeneous TP at region 0: "
                                       "local=32768, remote=131072.")
    assert out["pair"]["fix"] == "--block-size 64 on both sides"
    code, out = run_pair(p, d.replace("--kv-cache-memory-bytes 20GiB", "--kv-cache-memory-bytes 20GiB --block-size 16"))
    assert code == 0 and out["pair"]["compatible"] is True


def test_mooncake_pair_with_one_fp8_side_and_a_tp_ratio():
    """Prefill TP 2 (4 KV heads per rank, fp8: 64 x 4 x 128 x 1 = 32,768 bytes), decode TP 1 (8 heads, bf16:
    131,072): tp_ratio = 2 / 1 = 2, so the decode region must be 2 x 32,768 (mooncake_connector.py:372-379)."""
    p = (f"vllm serve {LLAMA} --kv-cache-memory-bytes 20GiB -tp 2 --kv-cache-dtype fp8 "
         f"--kv-transfer-config '{mooncake('kv_producer')}'")
    d = f"vllm serve {LLAMA} --kv-cache-memory-bytes 20GiB --kv-transfer-config '{mooncake('kv_consumer')}'"
    code, out = run_pair(p, d)
    assert code == 3
    assert out["outcome"]["error"] == ("Mooncake destination KV region length does not match the producer TP ratio "
                                       "at region 0: local=32768, remote=131072, tp_ratio=2.")


def test_moriio_pair_tp_rules():
    """MoRIIOConnector 0.34.0 (write mode: the prefill side is local): TP 3 and 2 do not divide
    (get_moriio_remote_tp_rank, ValueError); TP 1 and 2 of Llama's 8 KV heads do, but a different TP needs
    replicated KV heads on both sides (NotImplementedError); the same TP passes, the block sizes unchecked."""
    cfg = lambda role: json.dumps({"kv_connector": "MoRIIOConnector", "kv_role": role})  # noqa: E731
    base = f"vllm serve {LLAMA} --kv-cache-memory-bytes 20GiB"
    code, out = run_pair(f"{base} -tp 2 --kv-transfer-config '{cfg('kv_producer')}'",
                         f"{base} --kv-transfer-config '{cfg('kv_consumer')}'")
    assert code == 3 and out["outcome"]["error_type"] == "NotImplementedError"
    assert out["outcome"]["error"] == ("MoRIIO heterogeneous TP requires replicated KV heads on both prefill and "
                                       "decode. Got total_num_kv_heads=8, local_tp_size=2, remote_tp_size=1.")
    code, out = run_pair(f"{base} --kv-transfer-config '{cfg('kv_producer')}'",
                         f"{base} --block-size 16 --kv-transfer-config '{cfg('kv_consumer')}'")
    assert code == 0 and out["pair"]["rules"][-1]["rule"].startswith("block sizes (not checked by vLLM 0.34.0")
