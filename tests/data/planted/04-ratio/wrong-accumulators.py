# expect: the side is right | 32 accumulators is not
answer = (16, 32)
