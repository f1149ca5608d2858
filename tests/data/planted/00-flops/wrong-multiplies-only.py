# expect: counts the multiplications only
answer = 300 * 200 * 100
