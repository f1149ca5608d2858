# expect: is the count for 128x16 tiles
M, N, K = 1024, 2048, 512
answer = M * N * K * (1 / 128 + 1 / 16)
