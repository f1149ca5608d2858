# A right answer, naming the resource by its usual short name.
import numpy as np
answer = (np.int64(3), "smem")
