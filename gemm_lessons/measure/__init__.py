"""Measuring on the GPU in use: the device, CUDA-event timing, cuBLAS, problems and their checks, provenance, latency, rung timings."""
