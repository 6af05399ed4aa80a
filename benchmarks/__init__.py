"""nuvec's benchmark suite: nuvec against NumPy, numexpr, JAX, PyTorch and MLX in one run.

Run it from the repository root::

    python -m benchmarks                 # full run (under 10 minutes on 2 cores)
    python -m benchmarks --quick         # smaller, fewer repeats (under 3 minutes)
    python -m benchmarks --only fused --libs numpy,jax,nuvec --threads 1

Each library runs in its own subprocess (``benchmarks.worker``), one after another; the parent
(``benchmarks.cli``) collects the results, adds ratios to the best peer and to the machine's
limit, prints a table and writes ``results.json`` plus PNG plots. See benchmarks/README.md.
"""
