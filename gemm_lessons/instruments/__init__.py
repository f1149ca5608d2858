"""Looking inside a kernel: what it does on numba's CUDA simulator, what the compiler made of it,
and what Nsight Compute counts on a GPU.

* ``compiler_facts``: registers, local and shared memory, SASS counts of a compiled kernel;
  ``offline_sass``: the same compiled for sm_90 without a GPU.
* ``profiler`` (gl.profile) and ``ncu_metrics``: Nsight Compute's counters of a kernel, as a table.
* ``bank_model``: how many wavefronts one warp-wide shared-memory access costs (pure arithmetic).
* ``shared_tracer``: records the shared-memory accesses of one block of any kernel and costs
  them with the bank model (lessons 02-09; checked against Nsight Compute in lesson 06).
* ``global_loads``: counts the elements of A, B and C a kernel reads and writes (lessons 01-03).
* ``simulator_process``: runs an instrument in a child process on the simulator, so notebooks
  on a GPU machine can use them too.

Pictures of what they find (bank maps, the bank explorer widget) live in gemm_lessons.teaching.figures.
"""
