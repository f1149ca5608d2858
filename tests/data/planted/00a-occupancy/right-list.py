# A right answer, as a list with the resource capitalised.
answer = [3, "Shared memory"]
