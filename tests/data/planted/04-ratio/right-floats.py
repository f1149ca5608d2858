# A right answer, as floats.
answer = (16.0, 256.0)
