# A right answer, computed: a square x-by-x patch does x FLOP per value read.
side = 2 * 8
answer = [side, side ** 2]
