# A right answer, in numbers: 4 float32 loads before the barrier, and the whole copy rate.
my_in_flight = (16, 1)
