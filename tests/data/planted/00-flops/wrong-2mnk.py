# expect: is not the FLOP count | 2MNK
answer = 2 * 300 * 200 * 100
