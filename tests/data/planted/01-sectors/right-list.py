# A right answer, as a list of numpy integers.
import numpy as np
answer = [np.int32(2), np.int32(2)]
