# A right answer, computed from the model.
from gemm_lessons.model import limiter
from gemm_lessons.teaching import limiter_table

need = limiter_table.machine().in_flight_needed_per_sm
per_thread = 4 * (32 // 8)
my_in_flight = [float(per_thread), min(1.0, limiter.LATENCY_DUTY * per_thread * 2048 / need)]
