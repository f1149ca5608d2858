# expect: the warp of a block 32 threads wide
answer = (1, 4)
