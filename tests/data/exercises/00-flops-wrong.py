# Exercise 00-flops, wrong: 2MNK, one addition per element of C too many.
M, N, K = 300, 200, 100
answer = 2 * M * N * K
