"""Lesson 11 (from a kernel to a library): its facts, tables and figures, from the shape suite's
record and the probes' records.

``python -m gemm_lessons.runs.shapes`` writes results/shapes-<device>.json (records.ShapesRecord):
the dispatch model's calibration, the per-call cost of each way to call a kernel, and every shape
of its suite timed against cuBLAS.  These modules turn that record (and tools/*_probe.py's records)
into what the lesson shows, and time a few of the same things now where there is a GPU
(``call_overhead.call_costs``, ``shape_suite.measure_shapes``): on the simulator those return the
recorded numbers, labelled as such.  Every number the lesson states comes from here, so it follows
the record.

Facts (numbers, rows, dataclasses, figures, tables with no more text than a title and column
heads), by topic:

* ``suite_record``: the record, the lesson's three shapes, a row by shape, the model it measured.
* ``kernel_facts``: the library kernels' compiler facts, compiled offline or now.
* ``edge_shapes``: section 1, alignment and the odd shape.
* ``call_overhead``: section 2, what one call costs.
* ``split_k_plans``: section 3, split-K and how plans fill the GPU in waves.
* ``shape_suite``: section 4, gl.sgemm against cuBLAS per shape.
* ``dispatch_model``: section 4, the model's estimates against the measurements.
* ``profile_comparison``: section 4, Nsight Compute's profiles next to cuBLAS.
* ``probes``: the probes' records (tools/launch_probe.py and the others).

The lessons' cells write the sentences from these facts (the package returns facts).
"""
