# expect: more than the copy rate itself
from gemm_lessons.model import limiter
from gemm_lessons.teaching import limiter_table

need = limiter_table.machine().in_flight_needed_per_sm
my_in_flight = (16, limiter.LATENCY_DUTY * 16 * 2048 / need)
