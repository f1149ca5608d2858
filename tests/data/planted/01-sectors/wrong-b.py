# expect: A right; B not
answer = (2, 4)
