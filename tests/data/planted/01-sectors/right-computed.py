# A right answer, computed: 2 rows of A (one float each, far apart), 16 floats of B = 64 bytes.
rows = 32 // 16
answer = (rows, 16 * 4 // 32)
