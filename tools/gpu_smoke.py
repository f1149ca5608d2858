import gemm_lessons as gl
from gemm_lessons import ladder, cublas, inspect_kernel
from gemm_lessons.sgemm import vec, reg2d
print(gl.banner()); print(gl.device_info().as_dict())
for name, r in list(ladder.SGEMM.items()) + list(ladder.VARIANTS.items()):
    shapes = [(68, 44, 32, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5)] if name == "vec" else None
    print(name, [str(x) for x in gl.check_all(r, shapes)])
print("cublas", [str(x) for x in gl.check_all(cublas.sgemm)])
print(inspect_kernel.resources(vec.sgemm_vec), inspect_kernel.sass_summary(vec.sgemm_vec))
print(inspect_kernel.resources(reg2d.sgemm_reg2d), inspect_kernel.sass_summary(reg2d.sgemm_reg2d))
