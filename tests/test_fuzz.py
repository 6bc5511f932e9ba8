"""Fuzz: 5,020 seeded cases (a failure replays): 1,020 bad configs, flag values and deployments
files, and 4,000 hostile inputs (issue 39) across serve lines, manifests of every kind kvplan reads
(docker-compose, Kubernetes, KServe, production-stack and llm-d Helm values), deployments files,
start-up logs and special files: YAML bombs and depth, JSON depth, encodings, wrong types
everywhere, huge values, FIFOs, devices, symlinks, and payloads that would run a program.

A bad outcome is a traceback or kvplan's "internal error" (an unexpected exception), an exit code
outside 0-3, an error that is not one ``Error:`` line, a hang (a case past HANG_S of wall time is
interrupted: a FIFO opened for reading would wait for ever), more than SLOW_S of CPU, a memory
blow-up (the process's peak RSS growing by more than GROW_BYTES in one case; an address-space
limit stops a runaway before it takes the machine), a file written outside the temporary folder
(each kind runs with its working directory, HOME and caches there, and the repository's tree is
compared before and after), or anything executed (the payloads would create MARKER; it must never
appear). Cases run in-process (CliRunner, the click command built once), about 2-20 ms each."""

from __future__ import annotations

import codecs
import json
import os
import random
import resource
import signal
import stat
import time
from pathlib import Path

import pytest
import typer
import typer.testing
import yaml
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered
from kvplan.model.catalog import catalog_dir
from kvplan.options import options_for

app = ensure_registered()
runner = CliRunner()
SEED = 20261203
SLOW_S = 5.0  # CPU seconds; a hang shows up as far more (bounded work answers within ~1 s)

BASES = ["meta-llama/Meta-Llama-3.1-8B", "google/gemma-3-27b-it", "openai/gpt-oss-20b",
         "Qwen/Qwen3-Next-80B-A3B-Thinking", "deepseek-ai/DeepSeek-V3", "nvidia/Nemotron-H-56B-Base-8K",
         "ai21labs/Jamba-v0.1", "mistralai/Mistral-7B-v0.1", "meta-llama/Llama-4-Scout-17B-16E-Instruct"]
# config fields the family rules read (kvplan/model/families/, drafters.py)
READ_KEYS = """num_hidden_layers num_key_value_heads head_dim sliding_window layer_types max_position_embeddings
rope_scaling rope_parameters torch_dtype dtype quantization_config architectures model_type num_attention_heads
hidden_size qk_rope_head_dim num_nextn_predict_layers kv_lora_rank use_sliding_window num_global_key_value_heads
no_rope_layers mtp_num_hidden_layers max_window_layers mamba_ssm_cache_dtype index_topk hybrid_override_pattern
hybrid_layer_pattern global_head_dim eagle_config draft_vocab_size attention_k_eq_v attention_head_dim v_head_dim
swa_v_head_dim swa_num_key_value_heads swa_head_dim ssm_state_size sliding_window_pattern num_kv_shared_layers
no_rope_layer_interval n_groups mamba_num_heads mamba_head_dim mamba_expand mamba_d_state mamba_d_conv
linear_value_head_dim linear_num_value_heads linear_num_key_heads linear_key_head_dim linear_conv_kernel_dim
index_head_dim full_attention_interval decoder_layers attn_layer_period attn_layer_offset attention_chunk_size
text_config n_predict vocab_size intermediate_size num_experts""".split()
JUNK = [-1, 0, 1, 3, 2**31, 2**63, -2**63, 1.5, -0.5, float("nan"), float("inf"), "abc", "", [], [1, 2], [None], {},
        {"a": 1}, None, True, False, "1e309", 1e308, "full_attention", ["sliding_attention"] * 3, 10**30]
BAD_TEXT = ["", "{", "[]", "null", "42", '"x"', '{"architectures": }', "\x00\x01", "[" * 5000 + "]" * 5000,
            '{"architectures": ["LlamaForCausalLM"]}', '{"model_type": "llama"}', "{}", "\ufeff{}", "NaN"]
FLAG_JUNK = ["-1", "0", "1", "abc", "", " ", "1e309", "NaN", "inf", "-inf", "9" * 30, "1.5", "40GiB", "0.5", "auto",
             "1,2", "x" * 300, "1e9999999", "{", "[]", '{"a": 1}', "ü", "1:2:0", "0:1:-1", "1G", "1.5G", "40g",
             "-40GiB", "1e3", "H100", "vllm==9.9.9", "true", "2:1:0.1", "0x10", "1_000", "128k", "10**9"]
YAML_BAD = ["", "{", "deployments: 5", "deployments: [", "- a\n- b", ":::", "\t- x", "deployments:\n  - 1\n  - []",
            "a: &a [*a]", "deployments: {}", "deployments:\n  - name: x\n", "deployments: !!python/object:os.system {}",
            "x: " + "[" * 300 + "]" * 300, "deployments:\n  - &d {name: a, model: openai/gpt-oss-20b}\n  - *d"]
BASE_ARGS = {"simulate": ["openai/gpt-oss-20b", "--kv-cache-memory", "40GiB"],
             "inspect": ["openai/gpt-oss-20b"],
             "compare": ["openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--target-len", "8192", "--policies", "none"],
             "fit": ["Qwen/Qwen3-8B", "--gpu", "H100"]}
# flags left out: they reach a device, the network, a file, or torch's meta-device count by design
NOT_FUZZED = {"allocate", "budget_from_device", "device", "download", "plot", "exact_params", "junit_xml"}


def _mutate(rng: random.Random, cfg: dict) -> dict:
    target = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) and rng.random() < 0.6 else cfg
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(list(target) + READ_KEYS)
        if rng.random() < 0.2:
            target.pop(key, None)
            continue
        value = rng.choice(JUNK)
        old = target.get(key)
        if isinstance(old, list) and old and rng.random() < 0.5:  # one bad entry in a good list
            value = list(old)
            value[rng.randrange(len(value))] = rng.choice(JUNK)
        elif isinstance(old, dict) and old and rng.random() < 0.5:  # one bad field in a good dict
            value = {**old, rng.choice(list(old)): rng.choice(JUNK)}
        target[key] = value
    return cfg


def config_case(rng: random.Random, tmp: Path, i: int) -> list[str]:
    d = tmp / f"c{i}"
    d.mkdir()
    if rng.random() < 0.15:
        text = rng.choice(BAD_TEXT)
    else:
        cfg = json.loads(Path(catalog_dir(), rng.choice(BASES), "config.json").read_text())
        text = json.dumps(_mutate(rng, cfg))
    (d / "config.json").write_text(text)
    if rng.random() < 0.6:
        return ["inspect", str(d)]
    return ["simulate", str(d), "--kv-cache-memory", "40GiB", "--max-model-len", "8192"]


def flag_case(rng: random.Random, tmp: Path, i: int) -> list[str]:
    cmd = rng.choice(sorted(BASE_ARGS))
    opts = [o for o in options_for(cmd) if o.name not in NOT_FUZZED]
    args = [cmd, *BASE_ARGS[cmd]]
    for _ in range(rng.randint(1, 2)):
        o = rng.choice(opts)
        flag = rng.choice([o.flag, *o.aliases])
        args += [flag] if o.kind == "bool" else [flag, rng.choice(FLAG_JUNK)]
    return args


def deployments_case(rng: random.Random, tmp: Path, i: int) -> list[str]:
    f = tmp / f"d{i}.yaml"
    if rng.random() < 0.25:
        f.write_text(rng.choice(YAML_BAD))
        return ["check", str(f)]
    dep = {"name": rng.choice(["a", "", "x" * 80, 5]), "model": rng.choice(["openai/gpt-oss-20b", "gpt-oss-20b",
                                                                          "nope/x", 3]),
           "kv_cache_memory": rng.choice(["40GiB", "-1", "abc", 0, 40])}
    keys = [o.name for o in options_for("check")] + ["expect", "bogus", "tp"]
    # no junk key in 2 of 5 files, so that some deployments are answered whatever the option table's size
    for _ in range(rng.choice([0, 0, 1, 2, 3])):
        key = rng.choice(keys)
        if key == "expect":
            dep[key] = {rng.choice(["starts", "max_groups", "min_concurrency", "min_steady_concurrency",
                                    "max_padding_waste_pct", "same_layout_as", "bogus", "min_max_model_len"]):
                        rng.choice(JUNK[:20])}
        else:
            dep[key] = rng.choice(JUNK[:20] + FLAG_JUNK[:15])
    doc = rng.choice([{"deployments": [dep]}, {"deployments": [dep, dict(dep)]},
                      {"defaults": {"policy": rng.choice(FLAG_JUNK)}, "deployments": [dep]}, [dep]])
    f.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return ["check", str(f)]


def problems(r, cpu: float) -> list[str]:
    out = []
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        out.append(f"exception {type(r.exception).__name__}: {r.exception}")
    if r.exit_code not in (0, 1, 2, 3):
        out.append(f"exit code {r.exit_code}")
    if "Traceback" in r.output or "internal error" in r.stderr:
        out.append(f"stderr {r.stderr[:300]!r}")
    if r.exit_code in (1, 2):  # each error one line (a deployments file: one line per problem)
        lines = r.stderr.splitlines()
        if not lines or not all(line.startswith(("Error: ", "Warning: ")) for line in lines):
            out.append(f"stderr {r.stderr[:300]!r}")
    if cpu > SLOW_S:
        out.append(f"took {cpu:.1f} s of CPU")
    return out


# ---------------------------------------------------------------------------------------------
# Hostile inputs (issue 39)

HANG_S = 20.0  # wall seconds before a case counts as hung (bounded work answers in well under 1 s)
GROW_BYTES = 512 << 20  # the most one case may add to the process's peak RSS
AS_HEADROOM_BYTES = 6 << 30  # address space allowed above what the process maps when the fuzz starts
REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
MANIFESTS = sorted((DATA / "manifests").glob("*.yaml"))  # compose, Kubernetes, KServe, production-stack, llm-d
LOGS = sorted((REPO / "tests" / "logs").glob("*.log"))
SERVE_LINES = [e["line"] for e in yaml.safe_load((DATA / "serve_lines.yaml").read_text())["lines"]]
# payloads that would run a program or write a file if kvplan ever ran or evaluated them ({MARK}: the
# marker file; {EVIL}: an executable script that creates it)
EXEC = ["$(touch {MARK})", "`touch {MARK}`", "; touch {MARK}", "&& touch {MARK} &&", "| sh -c 'touch {MARK}'",
        "{EVIL}", "{EVIL} --version", "sh -c 'touch {MARK}'", "!!python/object/apply:os.system ['touch {MARK}']",
        "__import__('os').system('touch {MARK}')", "{{{{ lookup('pipe', 'touch {MARK}') }}}}", "$(IFS=_;touch${{IFS}}{MARK})",
        "file://{EVIL}", "${{VLLM_IMAGE:-$(touch {MARK})}}", ">{MARK}", "bash -c 'touch {MARK}' #"]
HUGE = ["9" * 400, "9" * 5000, "-" + "9" * 400, "1e400", "-1e400", "nan", "inf", "0x" + "f" * 100, "1" * 19,
        "x" * 5000, "a/" * 2500, "\x00", "nul\x00byte", "\u202e\u2066rtl", "\x1b[2J\x1b[31m", "%s%n%x", "ü" * 2000,
        "../" * 60 + "etc/passwd", "/dev/urandom", "/dev/zero", "-", "~", "", " ", "null", "~root", "vllm==" + "1" * 5000,
        "0.34." + "1" * 5000, "vllm/vllm-openai:v0." + "9" * 5000, "\t\r\n", "\\", "'", '"', "{", "[", "*a", "&a", "!!binary x"]
SERVE_FLAGS = ["--max-model-len", "--kv-cache-memory-bytes", "--speculative-config", "--hf-overrides",
               "--kv-transfer-config", "--gpu-memory-utilization", "-tp", "--config", "--model", "--served-model-name",
               "--tensor-parallel-size", "--block-size", "--dtype", "--quantization", "--max-num-seqs",
               "--compilation-config", "-O", "--kv-cache-dtype", "--max-num-batched-tokens", "--revision", "--tokenizer"]
SPECIAL = ["fifo.yaml", "urandom.yaml", "zero.yaml", "adir.yaml", "loop.yaml", "dangling.yaml", "utf16.yaml",
           "binary.yaml", "empty.yaml", "big.yaml", "evil.sh", "/dev/null", "models/fifo", "models/urandom"]


class _Hang(BaseException):
    """A case ran past HANG_S (raised by SIGALRM, through kvplan's own `except Exception`)."""


def _fmt(text: str, ctx: dict) -> str:
    return text.format(MARK=ctx["mark"], EVIL=ctx["evil"])


def _hostile(rng: random.Random, ctx: dict):
    """One value of a wrong kind: junk, huge, an executable payload, a special file, a deep value."""
    pick = rng.random()
    if pick < 0.3:
        return rng.choice(JUNK)
    if pick < 0.55:
        return rng.choice(HUGE)
    if pick < 0.8:
        return _fmt(rng.choice(EXEC), ctx)
    if pick < 0.9:
        return str(ctx["tmp"] / rng.choice(SPECIAL)) if rng.random() < 0.5 else rng.choice(SPECIAL)
    n = rng.choice([50, 150])  # a nested value the dumper can still write; deeper ones come as raw text
    value: object = rng.choice(["x", 1, None])
    for _ in range(n):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def _deep_json(rng: random.Random) -> str:
    n = rng.choice([101, 1000, 5000])
    return "[" * n + "]" * n if rng.random() < 0.5 else '{"a":' * n + "1" + "}" * n


def _raw_yaml(rng: random.Random, ctx: dict, valid: str) -> bytes:
    """A YAML file that is hostile as text: bombs, depth, tags, encodings, truncation."""
    bomb = ['x-a: &a ["--a","--a","--a","--a","--a","--a","--a","--a","--a"]']
    for prev, name in zip("abcdefghi", "bcdefghij"):
        bomb.append(f"x-{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    n = rng.choice([101, 1000, 5000])
    forms = [
        lambda: "\n".join(bomb) + "\nservices:\n  vllm:\n    image: vllm/vllm-openai\n    command: *j\n",
        lambda: "\n".join(bomb) + "\ndeployments:\n  - name: a\n    model: *j\n",
        lambda: "services:\n  vllm:\n    image: vllm/vllm-openai\n    command: " + "[" * n + "]" * n + "\n",
        lambda: "deployments:\n  - " + "- " * n + "x\n",
        lambda: "a: &a [*a]\nservices: {vllm: {image: vllm/vllm-openai, command: *a}}\n",
        lambda: _fmt("services:\n  vllm:\n    image: !!python/object/apply:os.system ['touch {MARK}']\n", ctx),
        lambda: "services:\n  vllm:\n    image: vllm/vllm-openai\n    command: [--max-model-len, " + "9" * 5000 + "]\n",
        lambda: "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: " + "9" * 5000 + "\n",
        lambda: valid[: rng.randrange(len(valid) + 1)],
        lambda: valid.replace("  ", "\t", 1),
        lambda: valid + "\n---\n" + rng.choice(["- [", "{", ": :", "\x00", "%YAML 9.9", "!!set {a}"]),
        lambda: "services: &s\n  vllm:\n    <<: *s\n    image: vllm/vllm-openai\n",
        lambda: "x: " + "y" * 1_000_000 + "\n" + valid,
    ]
    text = rng.choice(forms)()
    enc = rng.random()
    if enc < 0.06:
        return text.encode("utf-16")
    if enc < 0.1:
        return codecs.BOM_UTF8 + text.encode()
    if enc < 0.14:
        return bytes(rng.randrange(256) for _ in range(200)) + text.encode()
    return text.encode("utf-8", "surrogatepass")


def _paths(node, prefix=()):
    yield prefix
    if len(prefix) > 12:  # not into a deep value planted by an earlier mutation
        return
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _mutated(rng: random.Random, ctx: dict, doc):
    """``doc`` with one to three nodes replaced by hostile values, deleted or given the wrong shape."""
    for _ in range(rng.randint(1, 3)):
        paths = list(_paths(doc))
        path = rng.choice(paths)
        if not path:
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        op = rng.random()
        if op < 0.15 and isinstance(parent, dict):
            del parent[key]
        elif op < 0.3:  # the same value in another shape: a list as a mapping, a mapping as a string
            old = parent[key]
            parent[key] = {"x": old} if isinstance(old, list) else [old] if isinstance(old, dict) else [old, old]
        else:
            parent[key] = _hostile(rng, ctx)
    return doc


def _manifest_text(rng: random.Random, ctx: dict) -> bytes:
    src = rng.choice(MANIFESTS)
    valid = src.read_text()
    if rng.random() < 0.25:
        return _raw_yaml(rng, ctx, valid)
    docs = [d for d in yaml.safe_load_all(valid) if d is not None]
    docs = [_mutated(rng, ctx, d) for d in docs]
    return yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False).encode("utf-8", "surrogatepass")


def _serve_text(rng: random.Random, ctx: dict) -> str:
    words = rng.choice(SERVE_LINES).split()
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        if op < 0.3:
            words.insert(rng.randrange(len(words) + 1), str(_hostile(rng, ctx)))
        elif op < 0.55:
            flag = rng.choice(SERVE_FLAGS)
            value = _deep_json(rng) if flag in ("--speculative-config", "--hf-overrides", "--kv-transfer-config",
                                                "--compilation-config") and rng.random() < 0.5 else str(_hostile(rng, ctx))
            if flag == "--config" and rng.random() < 0.7:
                value = str(ctx["tmp"] / rng.choice([s for s in SPECIAL if s.endswith(".yaml")] + ["bomb.yaml"]))
            words += [flag, value]
        elif op < 0.7:
            words = [_fmt(rng.choice(["VLLM_X=$(touch {MARK})", "LD_PRELOAD={EVIL}", "PATH=/tmp/x:$PATH"]), ctx), *words]
        elif op < 0.8:
            words = words[: rng.randrange(1, len(words) + 1)]
        elif op < 0.9:
            words.append(rng.choice(["\\", "'", '"', "`", "&&", "|", ";", "#", "\r\n", "^", "\\\n"]))
        else:
            i = rng.randrange(len(words))
            words[i] = words[i] + rng.choice(["'", "\x00", "\u202e", "=" + "9" * 400])
    return " ".join(words)


def serve_line_case(rng: random.Random, ctx: dict, i: int) -> tuple[list[str], bytes | None]:
    text = _serve_text(rng, ctx)
    before = rng.choice([[], ["--gpu", "H100-80GB"], ["--policy", str(_hostile(rng, ctx))], ["--format", "json"]])
    if rng.random() < 0.2:
        return ["vllm", *before, "--line", "-"], text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:  # a prefill/decode pair: both lines hostile
        return ["vllm", *before, "--line", text, "--decode-line", _serve_text(rng, ctx)], None
    return ["vllm", *before, "--line", text], None


def manifest_case(rng: random.Random, ctx: dict, i: int) -> tuple[list[str], bytes | None]:
    data = _manifest_text(rng, ctx)
    extra = rng.choice([[], ["--gpu", "H100-80GB"], ["--container", str(_hostile(rng, ctx))], ["--format", "json"]])
    if rng.random() < 0.15:
        return ["vllm", "--file", "-", *extra], data
    f = ctx["tmp"] / f"m{i}.yaml"
    f.write_bytes(data)
    return ["vllm", "--file", str(f), *extra], None


def check_file_case(rng: random.Random, ctx: dict, i: int) -> tuple[list[str], bytes | None]:
    tmp = ctx["tmp"]
    f = tmp / f"check{i}.yaml"
    if rng.random() < 0.2:
        f.write_bytes(_raw_yaml(rng, ctx, "deployments:\n  - name: a\n    model: openai/gpt-oss-20b\n"
                                          "    kv_cache_memory: 40GiB\n"))
        return ["check", str(f)], None
    entry: dict = {"name": rng.choice(["a", "x" * 5000, _fmt(rng.choice(EXEC), ctx)]),
                   "kv_cache_memory": rng.choice(["40GiB", "40GiB", _hostile(rng, ctx)])}
    source = rng.random()
    if source < 0.35:
        m = tmp / f"check{i}-manifest.yaml"
        m.write_bytes(_manifest_text(rng, ctx))
        entry["manifest"] = rng.choice([m.name, str(m), str(_hostile(rng, ctx))])
    elif source < 0.6:
        entry["vllm_serve"] = _serve_text(rng, ctx)
    else:
        entry["model"] = rng.choice(["openai/gpt-oss-20b", "openai/gpt-oss-20b", str(_hostile(rng, ctx))])
    for _ in range(rng.randint(0, 3)):
        key = rng.choice(["vllm_python", "cross_check", "require_agreement", "env", "policy", "model_map", "expect",
                          "max_model_len", "hf_overrides", "kv_transfer_config", "download", "revision", "drafter"])
        entry[key] = {"vllm_python": ctx["evil"], "cross_check": True, "require_agreement": True,
                      "env": {"LD_PRELOAD": ctx["evil"], "VLLM_X": _fmt(rng.choice(EXEC), ctx)}}.get(key) \
            if rng.random() < 0.6 else _hostile(rng, ctx)
    doc = {"deployments": [entry]} if rng.random() < 0.8 else {"defaults": {"vllm_python": ctx["evil"]},
                                                               "deployments": [entry, dict(entry, name="b")]}
    f.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8", errors="surrogatepass")
    extra = rng.choice([[], ["--format", "json"], ["--junit-xml", str(tmp / f"j{i}.xml")]])
    return ["check", str(f), *extra], None


def log_case(rng: random.Random, ctx: dict, i: int) -> tuple[list[str], bytes | None]:
    lines = rng.choice(LOGS).read_text(encoding="utf-8", errors="replace").splitlines()
    for _ in range(rng.randint(1, 4)):
        j = rng.randrange(len(lines))
        op = rng.random()
        if op < 0.15:
            lines = lines[: j + 1]
            lines[-1] = lines[-1][: rng.randrange(len(lines[-1]) + 1)]
        elif op < 0.3:
            del lines[j]
            lines = lines or [""]
        elif op < 0.5:  # a figure no vLLM prints: 400 digits, 1e400, 5,000 digits
            import re as _re

            lines[j] = _re.sub(r"\d+", lambda m: rng.choice(["9" * 400, "9" * 5000, "1e400", "-0", m.group()]),
                               lines[j], count=rng.randint(1, 3))
        elif op < 0.6:
            lines.insert(j, rng.choice(["\x00" * 50, "\ufffd" * 100, "x" * 200_000, "\x1b[31mINFO\x1b[0m " * 20,
                                        "\r", "\t" * 100]))
        elif op < 0.7:
            lines.insert(j, _fmt(rng.choice(["(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1] "
                                             "vLLM server version 0.34.0, serving model $(touch {MARK})",
                                             "+ vllm serve openai/gpt-oss-20b --config {EVIL} `touch {MARK}`",
                                             "vllm serve {EVIL} --kv-cache-memory-bytes " + "9" * 400,
                                             "INFO 01-01 00:00:00 [utils.py:1] non-default args: {{'model': 'm', "
                                             "'a': " + "-" * 100_000 + "1, 'b': <X>}}",
                                             "INFO 01-01 00:00:00 [arg_utils.py:1] Namespace(model='m', a="
                                             + "(" * 300 + ")" * 300 + ")"]), ctx))
        elif op < 0.8:
            lines[j] = " ".join([lines[j]] * rng.randint(2, 3))
        elif op < 0.9:
            lines = [json.dumps({"log": x + "\n", "stream": "stdout", "time": "2026-01-01T00:00:00Z"}) for x in lines]
        else:
            lines = [x + "\r" for x in lines]
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:
        data = data.decode("utf-8", "replace").encode("utf-16")
    if rng.random() < 0.2:
        return ["explain-log", "-"], data
    f = ctx["tmp"] / f"log{i}.log"
    f.write_bytes(data)
    return ["explain-log", str(f), *rng.choice([[], ["--format", "json"], ["--model", str(_hostile(rng, ctx))]])], None


def special_file_case(rng: random.Random, ctx: dict, i: int) -> tuple[list[str], bytes | None]:
    tmp = ctx["tmp"]
    name = rng.choice(SPECIAL)
    path = name if name.startswith("/") else str(tmp / name)
    where = rng.choice(["file", "config", "check", "manifest", "model", "log", "stdin"])
    if where == "file":
        return ["vllm", "--file", path], None
    if where == "config":
        target = path if path.endswith(".yaml") else str(tmp / "fifo.yaml")
        return ["vllm", "--line", f"vllm serve openai/gpt-oss-20b --config {target}", "--gpu", "H100-80GB"], None
    if where == "check":
        return ["check", path], None
    if where == "manifest":
        d = tmp / f"special{i}.yaml"
        d.write_text(yaml.safe_dump({"deployments": [{"name": "a", "manifest": path, "gpu": "H100-80GB"}]}))
        return ["check", str(d)], None
    if where == "model":
        return [rng.choice(["inspect", "simulate"]), path if rng.random() < 0.5 else str(tmp / "models"),
                "--kv-cache-memory", "40GiB"], None
    if where == "log":
        return ["explain-log", path if name != "big.yaml" else str(tmp / "fifo.yaml")], None
    data = rng.choice([codecs.BOM_UTF16_LE + "services: {}".encode("utf-16-le"), bytes(range(256)) * 8, b"",
                       b"\xff\xfe\xfd", b"\x00" * 1000, codecs.BOM_UTF8 + b"services:\n  v:\n    image: vllm/vllm-openai\n"])
    return rng.choice([["vllm", "--file", "-"], ["vllm", "--line", "-"], ["explain-log", "-"], ["check", "-"]]), data


def _special_files(tmp: Path, ctx: dict) -> None:
    """The special files the cases name, made once per kind in its temporary folder."""
    os.mkfifo(tmp / "fifo.yaml")
    os.mkfifo(tmp / "fifo.log")
    (tmp / "urandom.yaml").symlink_to("/dev/urandom")
    (tmp / "zero.yaml").symlink_to("/dev/zero")
    (tmp / "adir.yaml").mkdir()
    (tmp / "loop.yaml").symlink_to(tmp / "loop.yaml")
    (tmp / "dangling.yaml").symlink_to(tmp / "nowhere")
    (tmp / "utf16.yaml").write_bytes("services:\n  v:\n    image: vllm/vllm-openai\n".encode("utf-16"))
    (tmp / "binary.yaml").write_bytes(bytes(range(256)) * 16)
    (tmp / "empty.yaml").write_bytes(b"")
    with open(tmp / "big.yaml", "wb") as f:  # sparse: 65 MiB on paper, nothing on disk; past every YAML cap
        f.truncate(65 << 20)
    (tmp / "bomb.yaml").write_bytes(b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                                    b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                                    b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                                    b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nmodel: *g\n")
    (tmp / "models").mkdir()
    os.mkfifo(tmp / "models" / "fifo")
    (tmp / "models" / "urandom").symlink_to("/dev/urandom")
    (tmp / "models" / "config.json").symlink_to("/dev/urandom")


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file of the repository (size, mtime), caches and git's own files left out."""
    skip = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in skip and not x.endswith(".egg-info")]
        for name in files:
            p = os.path.join(d, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """transformers' import (seconds, once) is not a fuzz case's time, nor is Typer building the
    click command from the app on every invoke (15 ms a case): it is built once, as it would be."""
    runner.invoke(app, ["inspect", "meta-llama/Meta-Llama-3.1-8B"])
    built = typer.main.get_command(app)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.testing, "_get_command", lambda a: built if a is app else typer.main.get_command(a))
        yield


KINDS = {config_case: 340, flag_case: 340, deployments_case: 340,  # 1,020
         serve_line_case: 1000, manifest_case: 800, check_file_case: 600, log_case: 800, special_file_case: 800}
HOSTILE = {serve_line_case, manifest_case, check_file_case, log_case, special_file_case}


def test_fuzz_has_5000_cases():
    assert sum(KINDS.values()) == 5020


@pytest.mark.parametrize("kind", list(KINDS), ids=lambda f: f.__name__)
def test_fuzz(kind, tmp_path, monkeypatch):
    # every write lands in tmp_path: the working directory, HOME and every cache; the Hub is off
    home = tmp_path / "home"
    home.mkdir()
    for var, value in {"HOME": home, "XDG_CACHE_HOME": tmp_path / "cache", "HF_HUB_OFFLINE": "1"}.items():
        monkeypatch.setenv(var, str(value))
    for var in ("KVPLAN_CACHE_DIR", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "HF_HOME", "HF_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    mark = outside / "executed"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {mark}\necho 0.34.0\n")
    evil.chmod(evil.stat().st_mode | stat.S_IXUSR)
    ctx = {"tmp": tmp_path, "mark": str(mark), "evil": str(evil)}
    hostile = kind in HOSTILE
    if hostile:
        _special_files(tmp_path, ctx)
    before = _tree(REPO)
    rng = random.Random(f"{SEED}-{kind.__name__}")
    failures, codes = [], {}

    def hang(signum, frame):
        raise _Hang()

    old_handler = signal.signal(signal.SIGALRM, hang)
    old_as = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + AS_HEADROOM_BYTES, old_as[1]))
    try:
        for i in range(KINDS[kind]):
            made = kind(rng, ctx, i) if hostile else (kind(rng, tmp_path, i), None)
            args, stdin = made
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            c0 = time.process_time()
            signal.setitimer(signal.ITIMER_REAL, HANG_S)
            try:
                r = runner.invoke(app, args, input=stdin)
            except _Hang:
                failures.append(f"case {i} {[a[:80] for a in args[:6]]}: hung (over {HANG_S:.0f} s)")
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            cpu = time.process_time() - c0
            grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss0
            codes[r.exit_code] = codes.get(r.exit_code, 0) + 1
            found = problems(r, cpu) + ([f"peak memory grew {grown >> 20} MiB"] if grown > GROW_BYTES else [])
            failures += [f"case {i} {[a[:80] for a in args[:6]]}: {p}" for p in found]
            if mark.exists():
                failures.append(f"case {i} {[a[:80] for a in args[:6]]}: EXECUTED a payload (wrote {mark})")
                mark.unlink()
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old_as)
        signal.signal(signal.SIGALRM, old_handler)
    assert failures == [], f"{len(failures)} bad outcomes:\n" + "\n".join(f[:600] for f in failures[:25])
    after = _tree(REPO)
    assert {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)} == set(), \
        "files written or changed in the repository"
    assert sorted(p.name for p in outside.iterdir()) == []
    # the generator reaches both sides: runs that answer and runs refused with an error
    assert codes.get(1, 0) + codes.get(2, 0) >= 2 and codes.get(0, 0) + codes.get(3, 0) >= 2, codes
