# expect: FLOP per value read, not 16
answer = (64, 64 * 64)
