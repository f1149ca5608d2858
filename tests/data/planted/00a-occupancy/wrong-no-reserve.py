# expect: would fit if shared memory held nothing else
answer = (4, "shared memory")
