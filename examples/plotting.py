"""The training examples' ``--plot PATH``: a loss curve saved as a PNG (needs matplotlib)."""

from __future__ import annotations


def save_loss_curve(
    path: str,
    losses: list[float],
    title: str,
    xlabel: str = "step",
    marks: dict[str, list[tuple[int, float]]] | None = None,
) -> bool:
    """Plots ``losses`` (one per step) and any ``marks`` (label -> (x, y) points) to ``path``.

    Returns False, after saying why, when matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot: matplotlib is not installed (pip install matplotlib); {path} not written")
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(1, len(losses) + 1), losses, lw=0.8, label="training loss")
    for label, points in (marks or {}).items():
        xs, ys = zip(*points)
        ax.plot(xs, ys, "o-", ms=3, label=label)
    ax.set(title=title, xlabel=xlabel, ylabel="loss")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"loss curve written to {path}")
    return True
