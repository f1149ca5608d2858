# expect: FLOP per float
M, N, K = 4096, 4096, 512
answer = 2 * M * N * K / (M * K + K * N + M * N)
