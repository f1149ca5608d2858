# A right answer, from the formula for the squarest tile.
M, N, K = 1024, 2048, 512
answer = M * N * K * (1 / 64 + 1 / 32)
