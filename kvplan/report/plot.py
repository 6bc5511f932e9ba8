"""``--plot``: the threshold sweep as a PNG (matplotlib, from the optional extra)."""

from __future__ import annotations

from kvplan.errors import OptionError


def plot_sweep(data: dict, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("--plot needs matplotlib: pip install 'kvplan[plot]'") from None
    rows = data["rows"]
    xs = [r["threshold"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    ax1.step(xs, [r["group_size"] for r in rows], where="post", label="group size")
    ax1.step(xs, [r["num_padding_layers"] for r in rows], where="post", label="padding layers")
    ax1.legend()
    ax1.set_ylabel("layers")
    ax2.step(xs, [r["max_concurrency"] for r in rows], where="post", color="tab:green", label="max concurrency")
    for r in rows:
        if not r["outcome"]["starts"]:
            ax2.axvspan(r["threshold"] - 1e-9, r["threshold"] + 1e-9, color="red", alpha=0.3)
    fails = [r["threshold"] for r in rows if not r["outcome"]["starts"]]
    if fails:
        ax2.scatter(fails, [0] * len(fails), color="red", marker="x", label="fails at start-up")
    for c in data["critical_thresholds"]:
        for ax in (ax1, ax2):
            ax.axvline(c["threshold"], color="grey", linestyle="--")
    ax2.legend()
    ax2.set_xlabel("grouping threshold")
    ax2.set_ylabel("requests")
    title = data["model"]["id"] + (f" + {data['drafter']['id']}" if data.get("drafter") else "")
    fig.suptitle(f"{title} ({data['policy']['name']})")
    try:
        fig.savefig(path, dpi=100)
    except OSError as e:
        raise OptionError(f"--plot: cannot write {path}: {e.strerror}") from None
    finally:
        plt.close(fig)
