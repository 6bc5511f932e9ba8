"""`--allocate`: the tensors and views kvplan.device builds from a plan, the verification,
the refusal path and the clean-up. Geometry tests need no torch; the rest run on the CPU
device with small budgets (CI installs the CPU wheel, torch==2.13.0)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

# torch is imported here, at collection, on purpose: transformers must see the same torch
# for every config this test session parses (it breaks when torch appears between two parses).
try:
    import torch
except ImportError:  # the geometry tests still run
    torch = None

from factories import full, gdn, mla, sw

from kvplan.device import probe, verify
from kvplan.device.probe import budget_from_device
from kvplan.device.verify import DeviceDoesNotFitError, allocate_and_verify
from kvplan.device.views import (
    backing_of,
    layer_parts,
    needs_block_outer,
    plan_views,
    request_block_order,
    view_style,
)
from kvplan.engines.vllm import get_era
from kvplan.errors import DeviceError, KvplanError, OptionError
from kvplan.results.allocation import Allocation
from kvplan.usecases.scenario import Scenario, run_scenario
from kvplan.specs import FullAttentionSpec
from kvplan.units import GiB, MiB

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (pip install torch==2.13.0)")

# Small budgets that start (the engine admits one max-length request) and allocate in
# well under a second on a CI CPU. The last field is the policy: 0.33.0, whose block size (16) the byte
# counts below were derived at (0.34.0's default 64 is tested in test_block_size.py and the goldens).
GPT = ("openai/gpt-oss-20b", "amazon/GPT-OSS-20B-P-EAGLE", "64MiB", 512, "vllm==0.33.0")
GPT_018 = (*GPT[:4], "vllm-1.5")  # vLLM 0.18: FlashAttention (2, num_blocks, ...) views, one tensor per slot
GEMMA = ("google/gemma-3-27b-it", None, "64MiB", 64, "vllm==0.33.0")
# Qwen3-Next pages are 1,179,648 B (576 tokens × 2 KV × 512 × 2 B) in 12 slots (14,155,776 B a block):
# a 512-token request needs 3 GDN groups × 3 blocks (0.33 align mode) + 1 full = 10 blocks plus the
# null block; 192 MiB holds 14.
QWEN_NEXT = ("Qwen/Qwen3-Next-80B-A3B-Thinking", None, "192MiB", 512, "vllm==0.33.0")
QWEN_NEXT_018 = ("Qwen/Qwen3-Next-80B-A3B-Thinking", None, "192MiB", 512, "vllm-1.5")
DEEPSEEK_V32 = ("deepseek-ai/DeepSeek-V3.2", None, "64MiB", 512, "vllm==0.33.0")  # one uniform-type group
MIMO = ("XiaomiMiMo/MiMo-V2-Flash", None, "96MiB", 256, "vllm==0.33.0")  # K 192 / V 128
CASES = {"gpt-oss-20b+P-EAGLE": GPT, "gemma-3-27b": GEMMA, "qwen3-next": QWEN_NEXT,
         "gpt-oss-20b+P-EAGLE@0.18": GPT_018, "qwen3-next@0.18": QWEN_NEXT_018}


@functools.cache
def plan_of(case: tuple):
    model, drafter, budget, max_model_len, policy = case
    r = run_scenario(Scenario(model=model, drafter=drafter, num_speculative_tokens=5 if drafter else None,
                              kv_cache_memory=budget, max_model_len=max_model_len, policy=policy))
    assert r.plan.starts, r.plan.failure
    return r.plan


@functools.cache
def report_of(case: tuple, corrupt: str | None = None) -> Allocation:
    return allocate_and_verify(plan_of(case), "cpu", corrupt=corrupt)


# --- geometry, no torch -------------------------------------------------------------------------


def test_gpt_oss_views_in_0_33_are_lbnhc_over_one_buffer():
    plan = plan_of(GPT)
    worker, tensors, failures = plan_views(plan)
    page = 16 * 8 * (64 + 64) * 2  # tokens · KV heads · (K + V head size) · bf16
    assert failures == [] and page == 32768
    nb = 64 * MiB // (page * 16)  # group size 16 (12 sliding + 12 full + 4 drafter → 2 groups of 16 slots)
    assert worker.num_blocks == nb == 128
    assert [t.size_bytes for t in tensors] == [page * nb] * 16
    assert backing_of(plan, worker) == "one buffer"  # slot i at i · page · num_blocks (layer_stride)
    t0 = tensors[0]
    assert t0.layout == "block_outer" and [lv.group for lv in t0.layers] == [0, 1]
    (kv,) = t0.layers[0].parts
    # logical [B, H, N, C], physical B, N, H, C; C = K then V of one token and head
    assert (kv.shape, kv.stride, kv.block_dim) == ((nb, 8, 16, 128), (page // 2, 128, 8 * 128, 1), 0)
    # slots 12-15 hold only full-attention layers: the sliding group pads them
    assert [len(t.layers) for t in tensors] == [2] * 12 + [1] * 4


def test_gpt_oss_views_before_0_33_are_flash_attention_k_then_v():
    plan = plan_of(GPT_018)
    worker, tensors, failures = plan_views(plan)
    nb = worker.num_blocks
    assert failures == [] and nb == 128 and backing_of(plan, worker) == "one tensor per slot"
    inner = 16 * 8 * 64  # elements of K (or V) in one block
    (kv,) = tensors[0].layers[0].parts
    assert tensors[0].layout == "kv_outer"
    assert (kv.shape, kv.stride, kv.offset, kv.block_dim) == ((2, nb, 16, 8, 64), (nb * inner, inner, 8 * 64, 64, 1), 0, 1)


def test_qwen3_next_views_are_block_outer_with_packed_mamba_states():
    worker, tensors, failures = plan_views(plan_of(QWEN_NEXT))
    page = 576 * 2 * (256 + 256) * 2
    assert failures == [] and page == 1179648
    nb = 192 * MiB // page // 12
    assert worker.num_blocks == nb == 14 and len(tensors) == 12
    mamba, attn = tensors[0].layers[0], tensors[0].layers[3]
    conv, ssm = mamba.parts
    pe = page // 2  # bf16 elements per page
    assert (conv.shape, conv.stride, conv.offset) == ((nb, 3, 8192), (pe, 8192, 1), 0)
    assert (ssm.shape, ssm.stride, ssm.offset) == ((nb, 32, 128, 128), (pe, 128 * 128, 128, 1), 3 * 8192)
    assert mamba.real_bytes == (3 * 8192 + 32 * 128 * 128) * 2 == 1097728  # padded to the 1,179,648 B page
    (kv,) = attn.parts
    assert (kv.shape, kv.stride) == ((nb, 2, 576, 512), (pe, 512, 1024, 1))
    assert {t.layout for t in tensors} == {"block_outer"}


def test_qwen3_next_attention_before_0_33_keeps_k_and_v_of_a_block_together():
    worker, tensors, failures = plan_views(plan_of(QWEN_NEXT_018))
    assert failures == []
    page, nb = tensors[0].page_size_bytes, worker.num_blocks
    (kv,) = tensors[0].layers[3].parts
    bs, heads, head = kv.shape[2:]
    inner = bs * heads * head
    # vLLM's _update_hybrid_attention_mamba_layout: same shape, a block's K and V adjacent
    assert kv.shape[:2] == (2, nb) and kv.stride[:2] == (inner, page // 2)
    assert {t.layout for t in tensors} == {"block_outer"}


def test_single_uniform_type_group_has_one_tensor_per_layer():
    plan = plan_of(DEEPSEEK_V32)
    worker, tensors, failures = plan_views(plan)
    assert failures == [] and len(worker.groups) == 1 and backing_of(plan, worker) == "one tensor per layer"
    assert len(tensors) == 122 and all(len(t.layers) == 1 for t in tensors)  # 61 MLA + 61 indexer caches
    indexer, attn = tensors[0].layers[0], tensors[1].layers[0]
    nb = worker.num_blocks
    assert nb == 64 * MiB // (61 * (64 * 132 + 64 * 576 * 2))
    assert indexer.parts[0].shape == (nb, 1, 64, 132) and indexer.parts[0].dtype == "uint8"
    assert attn.parts[0].shape == (nb, 1, 64, 576) and attn.parts[0].stride == (64 * 576, 576, 576, 1)
    assert tensors[0].size_bytes == 64 * 132 * nb and tensors[1].size_bytes == 64 * 576 * 2 * nb


def test_different_k_and_v_widths():
    _, tensors, failures = plan_views(plan_of(MIMO))
    (kv,) = tensors[0].layers[0].parts
    assert failures == [] and kv.shape[-1] == 192 + 128  # 0.33: one content dim, K then V
    spec = FullAttentionSpec(block_size=16, num_kv_heads=4, head_size=192, head_size_v=128, dtype="bfloat16")
    layout, (key, value) = layer_parts(spec, 10, spec.page_size_bytes, "kv_first")  # before 0.33
    assert layout == "block_outer" and (key.name, value.name) == ("key", "value")
    assert (key.shape, value.shape, value.offset) == ((10, 16, 4, 192), (10, 16, 4, 128), 16 * 4 * 192)


def test_layer_parts_for_padded_mla_and_fp8_ds_mla_pages():
    spec = full(page_size_padded=40960)  # real page 32768
    layout, (kv,) = layer_parts(spec, 10, 40960, view_style(get_era("vllm-1.5"), [spec]))
    assert layout == "block_outer" and kv.stride[:2] == (16 * 8 * 64, 40960 // 2)
    layout, (kv,) = layer_parts(spec, 10, 40960, "lbnhc")
    assert kv.shape == (10, 8, 16, 128) and kv.stride[0] == 40960 // 2
    layout, (lat,) = layer_parts(mla(), 10, 16 * 576 * 2, "kv_first")
    assert lat.shape == (10, 16, 576) and layout == "block_outer"
    layout, (lat,) = layer_parts(mla(bs=64, cache_dtype_str="fp8_ds_mla", dtype="uint8"), 10, 64 * 656, "kv_first")
    assert lat.shape == (10, 64, 656)


def test_view_style_by_era():
    latest, v018 = get_era("vllm-latest"), get_era("vllm-1.5")
    assert view_style(latest, [sw(128), full()]) == "lbnhc"
    assert view_style(v018, [sw(128), full()]) == "kv_first"
    assert view_style(v018, [full(), gdn()]) == "block_first"  # Mamba hybrid, as vLLM
    assert needs_block_outer([full(page_size_padded=65536), full()])
    assert needs_block_outer([mla(), full()])
    assert not needs_block_outer([mla(), mla()])


def test_request_block_order_interleaves_in_proportion():
    assert request_block_order([3, 1]) == [0, 0, 1, 0]
    assert request_block_order([2, 2]) == [0, 1, 0, 1]
    order = request_block_order([33, 32])  # gpt-oss at 512 tokens: sliding 33, full 32
    assert order.count(0) == 33 and order.count(1) == 32 and len(order) == 65
    assert request_block_order([0, 0]) == [0, 1]


def test_module_imports_without_torch():
    code = "import sys; import kvplan.device; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_torch_is_a_one_line_device_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch → ImportError
    with pytest.raises(DeviceError, match=r"pip install 'kvplan\[gpu\]'") as e:
        allocate_and_verify(plan_of(GPT), "cpu")
    assert e.value.exit_code == 1 and "\n" not in str(e.value)
    with pytest.raises(DeviceError, match="needs torch"):
        budget_from_device("cpu", 0.9, 0)


def test_free_cpu_memory_rule(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16384000 kB\nMemFree:          100000 kB\nMemAvailable:    8000000 kB\n")
    no_cgroup = tmp_path / "no-cgroup"
    # MemAvailable is in KiB: 8,000,000 · 1024 = 8,192,000,000 B
    assert probe.cpu_free_bytes(str(meminfo), str(no_cgroup)) == (8_192_000_000, "/proc/meminfo MemAvailable")
    # cgroup v2: memory.max − memory.current + inactive_file = 4 GiB − 3 GiB + 512 MiB = 1,610,612,736 B
    cg = tmp_path / "cg2"
    cg.mkdir()
    (cg / "memory.max").write_text(f"{4 * GiB}\n")
    (cg / "memory.current").write_text(f"{3 * GiB}\n")
    (cg / "memory.stat").write_text(f"anon 1000\ninactive_file {512 * MiB}\nactive_file 5\n")
    assert probe.cpu_free_bytes(str(meminfo), str(cg)) == (
        1_610_612_736, "/proc/meminfo MemAvailable, capped by the cgroup memory limit")
    # "max" is no limit; cgroup v1 then: limit 2 GiB − usage 1.5 GiB + total_inactive_file 0 = 536,870,912 B
    (cg / "memory.max").write_text("max\n")
    (cg / "memory").mkdir()
    (cg / "memory" / "memory.limit_in_bytes").write_text(f"{2 * GiB}\n")
    (cg / "memory" / "memory.usage_in_bytes").write_text(f"{3 * GiB // 2}\n")
    assert probe.cpu_free_bytes(str(meminfo), str(cg))[0] == 536_870_912
    # a limit above free memory does not raise it
    (cg / "memory" / "memory.limit_in_bytes").write_text(f"{64 * GiB}\n")
    assert probe.cpu_free_bytes(str(meminfo), str(cg))[0] == 8_192_000_000


# --- allocation and verification on the CPU device -------------------------------------------


@needs_torch
@pytest.mark.parametrize("name", list(CASES))
def test_allocation_equals_the_prediction_byte_for_byte(name):
    plan = plan_of(CASES[name])
    r = report_of(CASES[name])
    predicted = sum(t.size_bytes for t in plan.workers[0].tensors)
    assert r.ok, r.failures
    assert r.predicted_bytes == r.allocated_bytes == predicted
    assert [t.size_bytes for t in r.tensors] == [t.size_bytes for t in plan.workers[0].tensors]
    assert r.num_tensors == len(plan.workers[0].tensors) and r.num_blocks == plan.num_blocks
    # every block id but the null block is handed to one group and checked
    assert r.figures.blocks_checked == plan.num_blocks - 1
    assert r.leaked_bytes == 0 and r.failures == () and r.num_failures == 0
    # every page a layer owns is written once and read once; the scan reads every byte once
    assert r.figures.bytes_written == r.figures.bytes_read and r.figures.bytes_scanned == predicted
    # one backing buffer per worker where the era lays buffers out LBNHC (kv_cache_planning.py)
    assert r.backing == ("one buffer" if plan.era.kv_buffer_layout == "lbnhc" else "one tensor per slot")
    d = r.to_dict()
    assert all(isinstance(d[k], int) for k in d if k.endswith("_bytes"))
    json.dumps(d)  # plain data


@needs_torch
def test_bytes_written_for_gpt_oss_by_hand():
    # gpt-oss-20b + P-EAGLE at 512 tokens, 64 MiB, 0.33: 128 blocks of 32,768-byte pages, two
    # groups: sliding (12 layers, 33 blocks a request) and full (12 + 4 drafter layers, 32).
    # Blocks 1-127 follow request_block_order([33, 32]) (65 long) and then its first 62:
    # the 3 left out are its last three, sliding k=31 (31.5/33), full k=31 (31.5/32) and
    # sliding k=32 (32.5/33); so sliding gets 33 + 31 = 64 blocks, full 32 + 31 = 63.
    # Each layer writes (and reads back) its page of each of its group's blocks:
    #   (64 · 12 + 63 · 16) · 32,768 = 1,776 · 32,768 = 58,195,968 B
    # The scan reads all 16 tensors whole: 16 · 128 · 32,768 = 67,108,864 B = 64 MiB.
    r = report_of(GPT).figures
    assert r.bytes_written == r.bytes_read == 58_195_968
    assert r.bytes_scanned == 67_108_864 and r.blocks_checked == 127


@needs_torch
def test_allocation_for_other_layouts():
    for case in (DEEPSEEK_V32, MIMO):
        r = report_of(case)
        assert r.ok, r.failures
        assert r.predicted_bytes == r.allocated_bytes


@needs_torch
@pytest.mark.parametrize("name", list(CASES))
def test_verification_catches_two_groups_sharing_a_block(name):
    r = report_of(CASES[name], "overlap")
    assert not r.ok and r.num_failures >= 1 and r.corrupt == "overlap"
    # the second group took block b of the first: the first group's pages of b are overwritten
    first = r.failures[0]
    assert first.startswith("tensor 0, group 0, block ") and "holds block" in first and "(group 1)" in first


@needs_torch
@pytest.mark.parametrize("case", [GPT, GPT_018], ids=["0.33", "0.18"])
def test_overlap_fails_once_per_slot_the_two_groups_share(case):
    # gpt-oss + P-EAGLE: slots 0-11 each hold a sliding layer (group 0) and a full layer
    # (group 1), slots 12-15 a full layer only. The corruption hands group 1 block 1 (group
    # 0's first block; group 1's own first is block 2). In each shared slot the full layer's
    # pattern then overwrites the sliding layer's page of block 1: 12 read-back failures,
    # each naming block 1 and the sliding layer 2k (its slot-mate is full layer 2k + 1).
    r = report_of(case, "overlap")
    assert r.num_failures == 12
    assert [f.split(" read back")[0] for f in r.failures] == [
        f"tensor {k}, group 0, block 1: layer model.layers.{2 * k}.attn.attn" for k in range(12)]
    assert all(f.endswith(f"holds block 1 of layer model.layers.{2 * k + 1}.attn.attn (group 1)")
               for k, f in enumerate(r.failures))


@needs_torch
def test_verification_catches_a_wrong_pattern():
    r = report_of(GPT, "pattern")
    assert not r.ok and r.num_failures == 1
    assert r.failures[0].startswith("tensor 0, group 0, block 1: layer model.layers.0.")
    assert "1 of 32,768 page bytes wrong" in r.failures[0] and "no layer's pattern" in r.failures[0]
    assert report_of(GPT_018, "pattern").num_failures == 1


@needs_torch
@pytest.mark.parametrize("case", [GPT, GPT_018], ids=["one buffer", "one tensor per slot"])
def test_verification_catches_a_layer_that_sees_another_slots_pages(case):
    r = report_of(case, "alias")
    assert not r.ok
    # slot 1's first layer was built on tensor 0: it overwrote the slot-0 layer of its group there,
    # and its own tensor stayed empty (found by the raw scan, not by reading back through the view)
    assert any(f.startswith("tensor 0, group 0, block ") and "holds block" in f for f in r.failures)
    assert any(f.startswith("tensor 1, group 0, block ") and "never written" in f for f in r.failures)


@needs_torch
def test_unknown_corruption_and_overlap_without_two_groups():
    with pytest.raises(OptionError, match="overlap, pattern, alias"):
        allocate_and_verify(plan_of(GPT), "cpu", corrupt="nope")
    with pytest.raises(OptionError, match="two KV cache groups"):
        allocate_and_verify(plan_of(DEEPSEEK_V32), "cpu", corrupt="overlap")


@needs_torch
def test_refuses_a_layout_larger_than_free_memory(monkeypatch):
    monkeypatch.setattr(probe, "cpu_free_bytes", lambda: (100 * MiB, "test rule"))
    before = verify.live_bytes()
    with pytest.raises(DeviceDoesNotFitError) as e:
        allocate_and_verify(plan_of(GPT), "cpu")  # 64 MiB + scratch + 256 MiB headroom > 100 MiB
    assert isinstance(e.value, KvplanError) and e.value.exit_code == 3
    assert "does not fit on cpu" in str(e.value) and "100.00 MiB is free (test rule)" in str(e.value)
    assert verify.live_bytes() == before == 0  # nothing was allocated


@needs_torch
@pytest.mark.parametrize("case", [GPT, GPT_018], ids=["one buffer", "one tensor per slot"])
@pytest.mark.parametrize("error", [RuntimeError("induced"), KeyboardInterrupt()], ids=["error", "ctrl-c"])
def test_nothing_stays_allocated_after_an_error(monkeypatch, error, case):
    seen = []

    def boom(s, t, tables, chunk, failures):
        seen.append(verify.live_bytes())  # the tensors are allocated and written at this point
        raise error

    monkeypatch.setattr(verify, "_scan_tensor", boom)
    with pytest.raises(type(error)):
        allocate_and_verify(plan_of(case), "cpu")
    assert seen == [64 * MiB]
    assert verify.live_bytes() == 0


@needs_torch
def test_cuda_without_cuda_is_a_device_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(DeviceError, match="--device cpu"):
        allocate_and_verify(plan_of(GPT), "cuda")
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        allocate_and_verify(plan_of(GPT), "tpu")


# The report as --allocate printed it before it was a record (kvplan.results.allocation): key order
# and values, with the clock and free memory made deterministic (each timed pass takes 0.0123456789 s;
# free memory reads 10^12 B, then 7·10^9 B more at each read). Written by the dict-building code
# the record replaced; a record that changes a key, its place or a value fails here.
SNAPSHOTS = Path(__file__).parent / "data" / "allocate_reports.json"


class _Clock:
    def __init__(self) -> None:
        self.calls = 0

    def perf_counter(self) -> float:
        self.calls += 1
        return (self.calls - 1) * 0.0123456789


def _deterministic(monkeypatch) -> None:
    reads = iter(range(10 ** 12, 10 ** 13, 7 * 10 ** 9))
    monkeypatch.setattr(verify, "time", _Clock())
    monkeypatch.setattr(verify, "free_bytes", lambda torch, dev: (next(reads), "test rule"))


def _snapshot(name: str) -> dict:
    data = json.loads(SNAPSHOTS.read_text())[name]
    return {**data, "torch_version": torch.__version__}  # the snapshot's torch was 2.13.0+cpu


@needs_torch
@pytest.mark.parametrize("name, corrupt", [("gpt-oss-20b+P-EAGLE", None),
                                           ("gpt-oss-20b+P-EAGLE, corrupt=pattern", "pattern")])
def test_the_report_record_serialises_to_the_json_of_before(monkeypatch, name, corrupt):
    _deterministic(monkeypatch)
    r = allocate_and_verify(plan_of(GPT), "cpu", corrupt=corrupt)
    assert isinstance(r, Allocation)
    assert json.dumps(r.to_dict(), indent=1) == json.dumps(_snapshot(name), indent=1)


@needs_torch
def test_an_allocation_other_than_predicted_is_one_more_failure(monkeypatch):
    _deterministic(monkeypatch)
    run = verify._run
    monkeypatch.setattr(verify, "_run", lambda *a, **k: replace(run(*a, **k), allocated_bytes=67_108_865))
    r = allocate_and_verify(plan_of(GPT), "cpu")
    want = _snapshot("gpt-oss-20b+P-EAGLE")
    want.update(allocated_bytes=67_108_865, ok=False, num_failures=1,
                failures=["allocated 67,108,865 B, predicted 67,108,864 B"])
    assert json.dumps(r.to_dict()) == json.dumps(want)


@needs_torch
def test_simulate_carries_the_record_and_prints_its_json(monkeypatch):
    import kvplan

    _deterministic(monkeypatch)
    model, drafter, budget, mml, policy = GPT
    env = kvplan.simulate(model, drafter=drafter, num_speculative_tokens=5, kv_cache_memory=budget,
                          max_model_len=mml, policy=policy, allocate=True, device="cpu")
    assert isinstance(env.body.allocation, Allocation) and env.outcome.ok
    assert list(env)[-2:] == ["allocation", "warnings"]  # the body's last key, as before
    assert json.dumps(env["allocation"]) == json.dumps(env.body.allocation.to_dict())
    assert [t["size_bytes"] for t in env["allocation"]["tensors"]] == [t.size_bytes for t in env.body.allocation.tensors]


@needs_torch
def test_budget_from_device(monkeypatch):
    monkeypatch.setattr(probe, "cpu_free_bytes", lambda: (10 * GiB, "test rule"))
    assert budget_from_device("cpu", 0.5, 1 * GiB) == 4 * GiB  # 10 GiB · 0.5 − 1 GiB
    assert budget_from_device("cpu", 0.92, 0) == 9_878_424_780  # int(10 · 2^30 · 0.92)
    with pytest.raises(DeviceError, match="lower --reserve"):
        budget_from_device("cpu", 0.5, 6 * GiB)


@needs_torch
def test_device_budget_utilization_defaults_to_the_era(monkeypatch):
    # issue 10: --budget-from-device used 0.92 whatever the policy; vLLM's default
    # (vllm/config/cache.py CacheConfig.gpu_memory_utilization) is 0.9 in 0.10.1-0.19.1 and
    # 0.92 in 0.20.0-0.33.0 (read in each release's source).
    monkeypatch.setattr(probe, "cpu_free_bytes", lambda: (10 * GiB, "test rule"))
    old = probe.device_kv_budget("cpu", get_era("vllm-1.5"))
    assert (old.gpu_memory_utilization, old.gpu_memory_utilization_source) == (0.9, "vllm-0.18 default")
    assert old.kv_cache_memory_bytes == 9_663_676_416  # int(10 · 2^30 · 0.9)
    latest = probe.device_kv_budget("cpu", get_era("vllm-latest"), reserve_bytes=GiB)
    assert latest.kv_cache_memory_bytes == 9_878_424_780 - GiB  # int(10 · 2^30 · 0.92) − 1 GiB
    given = probe.device_kv_budget("cpu", get_era("vllm-1.5"), 0.5)
    assert (given.gpu_memory_utilization, given.kv_cache_memory_bytes) == (0.5, 5 * GiB)
    assert given.gpu_memory_utilization_source == "--gpu-memory-utilization"


# --- through the CLI -----------------------------------------------------------------------------


@needs_torch
def test_cli_allocate_on_cpu_json():
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    app = ensure_registered()

    model, drafter, budget, mml, _ = GPT
    r = CliRunner().invoke(app, ["simulate", model, "--drafter", drafter, "--num-speculative-tokens", "5",
                                 "--kv-cache-memory", budget, "--max-model-len", str(mml),
                                 "--allocate", "--device", "cpu", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    a = data["allocation"]
    assert a["ok"] and a["device"] == "cpu"
    assert a["allocated_bytes"] == a["predicted_bytes"] == sum(t["size_bytes"] for t in data["tensors"])


@needs_torch
@pytest.mark.parametrize("policy, utilization, budget", [
    ("vllm-1.5", 0.9, 483_183_820),  # int(512 MiB · 0.9)
    ("vllm-latest", 0.92, 493_921_239),  # int(512 MiB · 0.92)
])
def test_cli_budget_from_device_uses_the_policys_utilization(monkeypatch, policy, utilization, budget):
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    app = ensure_registered()

    monkeypatch.setattr(probe, "cpu_free_bytes", lambda: (512 * MiB, "test rule"))
    r = CliRunner().invoke(app, ["simulate", "openai/gpt-oss-20b", "--max-model-len", "512", "--policy", policy,
                                 "--budget-from-device", "--device", "cpu", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["budget"]["gpu_memory_utilization"] == utilization
    assert data["budget"]["kv_cache_memory_bytes"] == data["memory"]["available_bytes"] == budget


@needs_torch
def test_cli_refusal_exits_3_with_one_line(monkeypatch):
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    app = ensure_registered()

    monkeypatch.setattr(probe, "cpu_free_bytes", lambda: (100 * MiB, "test rule"))
    model, drafter, budget, mml, _ = GPT
    r = CliRunner().invoke(app, ["simulate", model, "--drafter", drafter, "--num-speculative-tokens", "5",
                                 "--kv-cache-memory", budget, "--max-model-len", str(mml),
                                 "--allocate", "--device", "cpu", "--format", "json"])
    assert r.exit_code == 3
    assert r.stderr.startswith("Error: the layout does not fit on cpu") and r.stderr.count("\n") == 1


@needs_torch
@pytest.mark.parametrize("policy", ["vllm-latest", "vllm-1.5"])
def test_pages_that_are_not_whole_words(policy):
    # 3 tokens × 1 head × (5 + 5) × 1 B = 30-byte pages: K and V halves of 15 B, slots at odd offsets
    from kvplan.engines.vllm import ModelFacts, SimulateOptions, simulate
    from kvplan.specs import LayerSpec, SlidingWindowSpec

    def spec(i):
        kw = dict(block_size=3, num_kv_heads=1, head_size=5, dtype="uint8")
        return SlidingWindowSpec(sliding_window=8, **kw) if i % 2 else FullAttentionSpec(**kw)

    layers = tuple(LayerSpec(f"model.layers.{i}.attn", spec(i), "target", i) for i in range(6))
    plan = simulate(layers, (), ModelFacts(max_model_len=64), get_era(policy),
                    SimulateOptions(kv_cache_memory_bytes=1 << 16, max_model_len=64))
    assert plan.starts and plan.page_size_bytes == 30
    r = allocate_and_verify(plan, "cpu")
    assert r.ok, r.failures
    assert r.allocated_bytes == r.predicted_bytes == 3 * 30 * plan.num_blocks
    bad = allocate_and_verify(plan, "cpu", corrupt="overlap")
    assert not bad.ok and "(group 1)" in bad.failures[0]
