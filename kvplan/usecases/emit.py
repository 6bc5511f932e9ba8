"""`kvplan emit`: a deployment kvplan simulated to start, written as the files people deploy with:
the ``vllm serve`` line, docker compose, a Kubernetes Deployment, vLLM production-stack Helm values,
a KServe ``InferenceService`` (a custom predictor container), llm-d model-service values
(``modelCommand: custom``), a Dynamo ``DynamoGraphDeployment`` and a Ray Serve LLM config. Each is written so that kvplan's own
intake (``kvplan vllm --file`` / ``--line``; ``serve.manifests``) reads it back to the same
deployment, and the tests do that for every format.

The vLLM flags are the deployment's options that are ``vllm serve`` flags (the option table's
``vllm`` marks), each spelt as the release's own parser spells it (``serve_flags``: the first of
kvplan's spellings in that release's table), with values in vLLM's syntax (sizes as plain
integers, JSON as JSON). kvplan's own options (``--gpu``, budget overrides) are not vLLM's: the
reader is given them again. The release is the image tag (``vllm/vllm-openai:vX.Y.Z``) where the
format has a vLLM image; Dynamo's and Ray's runtime images carry their own releases, so their
files are read back with ``--policy``.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from kvplan.errors import OptionError
from kvplan.results import outcome
from kvplan.results.emit import EmitBody
from kvplan.results.envelope import Envelope
from kvplan.usecases.envelope import envelope

FORMATS = ("serve", "compose", "k8s", "production-stack", "kserve", "llm-d", "dynamo", "ray")


def _value(v) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, float) and v.is_integer():
        return str(v)
    return str(v)


def vllm_args(scenario, release: str) -> list[str]:
    """The deployment's vLLM flags, in the release's spelling (after ``vllm serve MODEL``)."""
    from kvplan.engines.vllm.serve_flags import flag_table
    from kvplan.options import BOOL, ENV, MAP, REPEATABLE, SETTINGS, TRISTATE, scenario_options

    table = flag_table(release).by_option
    out: list[str] = []
    for o in scenario_options():
        if not o.vllm or o.kind in REPEATABLE | {ENV, MAP, SETTINGS} or o.name in SPECULATIVE:
            continue
        v = getattr(scenario, o.name, None)
        if v is None or v == o.default:
            continue
        flag = next((f for f in o.flags if f in table), o.flag)
        if o.kind in (BOOL, TRISTATE):
            out.append(flag if v else "--no-" + flag[2:])
        elif isinstance(v, tuple):  # a list flag (nargs="+"): its values one word each
            out += [flag, *(_value(x) for x in v)]
        else:
            out += [flag, _value(v)]
    spec = speculative_config(scenario)
    if spec:
        out += ["--speculative-config", _value(spec)]
    return out


# kvplan's options that are one vLLM flag together: --speculative-config's JSON (vLLM's SpeculativeConfig fields
# method, model, num_speculative_tokens, parallel_drafting; 0.34.0 vllm/config/speculative.py), the flag every
# release kvplan accepts has (--speculative-model and --num-speculative-tokens are older than 0.10.1)
SPECULATIVE = frozenset({"drafter", "speculative_method", "num_speculative_tokens", "parallel_drafting"})


def speculative_config(scenario) -> dict:
    """The deployment's ``--speculative-config`` (empty without speculative decoding), in the keys
    ``serve.reader`` reads back: kvplan's method names are vLLM's spellings (model/methods.py)."""
    spec: dict = {}
    if scenario.speculative_method is not None:
        spec["method"] = scenario.speculative_method
    if scenario.drafter is not None:
        spec["model"] = scenario.drafter
    if scenario.num_speculative_tokens is not None:
        spec["num_speculative_tokens"] = scenario.num_speculative_tokens
    if scenario.parallel_drafting is not None and spec:
        spec["parallel_drafting"] = scenario.parallel_drafting
    return spec


def _image(release: str) -> str:
    return f"vllm/vllm-openai:v{release}"


def _yaml(data) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=1000)


def _gpus(scenario) -> int:
    """The GPUs one pod (one ``vllm serve``) takes: every tensor-, pipeline- and data-parallel rank it runs."""
    return ((scenario.tensor_parallel_size or 1) * (scenario.pipeline_parallel_size or 1)
            * (scenario.data_parallel_size or 1))


def render(fmt: str, model: str, args: list[str], env: dict, release: str, gpus: int) -> str:
    name = "vllm"
    if fmt == "serve":
        prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())
        return prefix + shlex.join(["vllm", "serve", model, *args]) + "\n"
    if fmt == "compose":
        svc = {"image": _image(release), "command": [model, *args], "ipc": "host",
               "deploy": {"resources": {"reservations": {"devices": [
                   {"driver": "nvidia", "count": gpus, "capabilities": ["gpu"]}]}}}}
        if env:
            svc["environment"] = dict(env)
        return _yaml({"services": {name: svc}})
    if fmt == "k8s":
        container = {"name": name, "image": _image(release), "command": ["vllm", "serve"], "args": [model, *args],
                     "ports": [{"containerPort": 8000}],
                     "resources": {"limits": {"nvidia.com/gpu": gpus}}}
        if env:
            container["env"] = [{"name": k, "value": v} for k, v in env.items()]
        pod: dict = {"containers": [container]}
        if gpus > 1:  # ranks talk through /dev/shm (NCCL, vLLM's shared-memory broadcast), 64 MiB in a container by
            # default: vLLM's Kubernetes guide (docs/deployment/k8s.md, its GPU Deployment) mounts a 2Gi memory-backed
            # emptyDir there; production-stack PR #994 gives its operator the same for tensor parallelism
            container["volumeMounts"] = [{"name": "shm", "mountPath": "/dev/shm"}]
            pod["volumes"] = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]
        return _yaml({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                      "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                               "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}})
    if fmt == "production-stack":
        spec = {"name": name, "repository": "vllm/vllm-openai", "tag": f"v{release}", "modelURL": model,
                "replicaCount": 1, "requestGPU": gpus, "vllmConfig": {"extraArgs": list(args)}}
        if env:
            spec["env"] = [{"name": k, "value": v} for k, v in env.items()]
        return _yaml({"servingEngineSpec": {"modelSpec": [spec]}})
    if fmt == "kserve":  # an InferenceService with a custom predictor container (kvplan.serve.kserve reads it)
        container = {"name": "kserve-container", "image": _image(release), "command": ["vllm", "serve"],
                     "args": [model, *args], "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
        if env:
            container["env"] = [{"name": k, "value": v} for k, v in env.items()]
        return _yaml({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                      "metadata": {"name": name}, "spec": {"predictor": {"containers": [container]}}})
    if fmt == "llm-d":  # llm-d-modelservice values; modelCommand custom: the container's command + args as written
        container = {"name": name, "image": _image(release), "modelCommand": "custom",
                     "command": ["vllm", "serve", model], "args": list(args),
                     "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
        if env:
            container["env"] = [{"name": k, "value": v} for k, v in env.items()]
        return _yaml({"modelArtifacts": {"uri": f"hf://{model}", "name": model},
                      "decode": {"create": True, "replicas": 1, "containers": [container]},
                      "prefill": {"create": False}})
    if fmt == "dynamo":
        # a corev1.Container (ExtraPodSpec.MainContainer, Dynamo's api/v1alpha1/common.go), whose name is required
        main: dict[str, Any] = {"name": "main", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:TAG",
                "command": ["python3", "-m", "dynamo.vllm"],
                "args": ["--model", model, *args]}
        if env:
            main["env"] = [{"name": k, "value": v} for k, v in env.items()]
        return _yaml({"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
                      "metadata": {"name": name},
                      "spec": {"services": {
                          "Frontend": {"componentType": "frontend", "replicas": 1},
                          "VllmWorker": {"componentType": "worker", "replicas": 1,
                                         "resources": {"limits": {"gpu": str(gpus)}},
                                         "extraPodSpec": {"mainContainer": main}}}}})
    if fmt == "ray":
        return _yaml({"applications": [{"name": name, "route_prefix": "/",
                                        "import_path": "ray.serve.llm:build_openai_app",
                                        "args": {"llm_configs": [_ray_config(model, args, env)]}}]})
    raise OptionError(f"--as {fmt}: choose one of {', '.join(FORMATS)}")


def _ray_config(model: str, args: list[str], env: dict) -> dict:
    """An LLMConfig: each flag as an engine_kwargs key (``--max-model-len 8k`` → ``max_model_len: 8k``)."""
    kwargs: dict = {}
    i = 0
    while i < len(args):
        key = args[i][2:]
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            raw = args[i + 1]
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
            kwargs[key.replace("-", "_")] = value
            i += 2
        else:
            kwargs[key[3:].replace("-", "_") if key.startswith("no-") else key.replace("-", "_")] = \
                not key.startswith("no-")
            i += 1
    config: dict[str, Any] = {"model_loading_config": {"model_id": model, "model_source": model}}
    if kwargs:
        config["engine_kwargs"] = kwargs
    if env:
        config["runtime_env"] = {"env_vars": dict(env)}
    return config


def emit(model: str | None = None, *, as_: str, **given) -> Envelope:
    """The deployment (``usecases.intake.read_deployment``'s arguments) written as ``as_``; only a
    deployment kvplan simulates to start is written (OptionError names the failure otherwise)."""
    from kvplan.usecases.intake import run_started

    if as_ not in FORMATS:
        raise OptionError(f"--as {as_}: choose one of {', '.join(FORMATS)}")
    intake, scenario, result = run_started("emit", "kvplan writes only deployments that start", model, **given)
    plan, body = result.plan, result.body
    release = plan.era.stands_for
    args = vllm_args(scenario, release)
    env = {k: str(v) for k, v in (scenario.env or {}).items()}
    text = render(as_, scenario.model, args, env, release, _gpus(scenario))
    mine = [f"--gpu {scenario.gpu}"] if scenario.gpu else []
    if as_ in ("serve", "dynamo", "ray"):  # no vLLM image tag to name the release
        mine.append(f"--policy vllm=={release}")
    how = ("kvplan vllm " + " ".join([*mine, "--line -"]) if as_ == "serve"
           else "kvplan vllm " + " ".join([*mine, "--file FILE"]))
    image = None if as_ in ("serve", "dynamo", "ray") else _image(release)
    emit_body = EmitBody(as_, scenario.model, release, image, tuple(args), env, body.memory.num_blocks,
                         body.serving.block_size, body.scheduler.max_model_len, how, text)
    return envelope("emit", outcome=outcome(ok=True, starts=True), body=emit_body, model=result.layout.target,
                    drafter=result.layout.drafter, era=plan.era,
                    warnings=[*intake.warnings, *(result.budget.warnings if result.budget is not None else ()),
                              *result.warnings])
