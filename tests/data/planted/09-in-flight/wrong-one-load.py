# expect: that is one load
my_in_flight = (4, 1.0)
