# expect: is not the arithmetic intensity | counts C twice
M, N, K = 4096, 4096, 512
answer = 2 * M * N * K / (4 * (M * K + K * N + 2 * M * N))
