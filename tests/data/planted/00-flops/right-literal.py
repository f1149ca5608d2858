# A right answer, as a float literal.
answer = 5.97e6 * 2
