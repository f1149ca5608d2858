"""Every kernel of the course: the ladder index, one SGEMM rung per module (sgemm/), the transpose rungs (transpose/), the library's own kernels (library/), the primer's (primer/)."""
