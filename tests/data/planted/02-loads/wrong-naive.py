# expect: is not the fewest global loads
answer = 2 * 1024 * 2048 * 512
