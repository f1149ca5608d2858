# A right answer, rounded to one decimal (the check allows 1e-4 relative).
answer = 204.8
