# expect: 3 is right | limiting resource is not 'registers'
answer = (3, "registers")
