"""The library's own kernels (lesson 11): any-shape SGEMM, padding copies, split-K reductions, the any-shape transposes."""
