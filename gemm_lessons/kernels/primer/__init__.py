"""The primer's kernels (notebook 00a): a first kernel launched by hand, and one that passes values through shared memory."""
