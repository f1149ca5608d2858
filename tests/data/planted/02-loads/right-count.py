# A right answer, counted block by block.
M, N, K = 1024, 2048, 512
best = None
for BM, BN in ((64, 32), (128, 16), (256, 8)):
    blocks = (M // BM) * (N // BN)
    loads = blocks * (BM * K + K * BN)
    best = loads if best is None else min(best, loads)
answer = best
