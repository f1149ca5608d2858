"""Quick GPU check of the measurement helpers the notebooks use (small sizes)."""
import gemm_lessons as gl
from gemm_lessons import ladder, measure

print(gl.banner())
t = measure.compare({"naive": ladder.SGEMM["naive"], "vec_split": ladder.SGEMM["vec_split"]}, size=(1024, 1024, 1024))
print(t._repr_markdown_())
print(measure.compare_transpose({"wide": ladder.TRANSPOSE["wide"]}, shape=(2048, 1024))._repr_markdown_())
try:
    measure.compare({"vec": ladder.SGEMM["vec"]}, size=(64, 64, 63))
except ValueError as e:
    print("refused as expected:", str(e)[:80])
print(measure.copy_bandwidth((2048, 2048))._repr_markdown_())
print(measure.cublas_sweep((512, 1024))._repr_markdown_())
