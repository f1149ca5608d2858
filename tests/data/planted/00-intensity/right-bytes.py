# A right answer: FLOP over the bytes of A, B and C each moved once.
import numpy as np
M, N, K = 4096, 4096, 512
flop = 2 * M * N * K
bytes_moved = np.float32(4) * (M * K + K * N + M * N)
answer = flop / bytes_moved
