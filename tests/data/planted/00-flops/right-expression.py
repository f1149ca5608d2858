# A right answer, written as the count per element times the elements of C.
M, N, K = 300, 200, 100
per_element = K + (K - 1)  # K multiplies, K - 1 additions
answer = per_element * M * N
