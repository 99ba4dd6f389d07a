"""Example applications used by ``make demo``, the notebooks and the benchmarks."""
