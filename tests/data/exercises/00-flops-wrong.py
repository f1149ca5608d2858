# Exercise 00-flops, wrong: 2MNK, alpha and beta not counted.
M, N, K = 300, 200, 100
answer = 2 * M * N * K
