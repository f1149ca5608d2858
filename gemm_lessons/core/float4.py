"""128-bit loads and stores (LDG.128 / STG.128, LDS.128 / STS.128) from numba.

numba indexes arrays one float at a time and tells LLVM nothing about the alignment of an
array's data pointer, so four neighbouring loads from global memory stay four LDG.32.  These
two small intrinsics emit one ``<4 x float>`` load or store with 16-byte alignment instead:
the caller promises that the address is a multiple of 16 bytes (C-contiguous float32 array,
16-byte-aligned base, row length and column index multiples of 4).

Shared arrays are aligned, so NVVM often merges four neighbouring shared accesses into
LDS.128 / STS.128 by itself when the index is visibly a multiple of 4, but not always (not
with the k-loop written out, lesson 05, nor with a runtime buffer index, lesson 07):
``load4`` and ``store4`` work on shared arrays too and make the 16-byte access explicit.

``load2`` and ``store2`` move two floats (8 bytes: LDG.64 / STG.64) for rows that start on
8-byte boundaries only (an even row length; transpose/pairs.py).

``load1`` and ``store1`` are their scalar twins for kernels that cannot move 16 bytes at a
time (any_shape.py): one float, with none of the negative-index handling numba adds to
``X[i, j]`` (a compare and a select per index, and registers, in a loop that loads 8 scalars
per slice); the caller promises indices inside the array.

``load4_flat``/``store4_flat`` and ``load1_flat``/``store1_flat`` take one index into the array
seen as a flat row-major run of floats (element i of a rows x cols array is [i // cols, i % cols]):
a float4 may then straddle two rows, which is what a kernel needs when rows do not start on
16-byte boundaries (transpose/any_wide.py).  They take C-contiguous arrays only (a compile-time
TypeError otherwise); load4_flat/store4_flat need i a multiple of 4 and a 16-byte-aligned base.

On the simulator the same names are plain Python functions doing scalar accesses.
"""
from gemm_lessons.core import backend

if backend.SIMULATOR:

    def load4(arr, row, col):
        return arr[row, col], arr[row, col + 1], arr[row, col + 2], arr[row, col + 3]

    def store4(arr, row, col, v0, v1, v2, v3):
        arr[row, col] = v0
        arr[row, col + 1] = v1
        arr[row, col + 2] = v2
        arr[row, col + 3] = v3

    def load2(arr, row, col):
        return arr[row, col], arr[row, col + 1]

    def store2(arr, row, col, v0, v1):
        arr[row, col], arr[row, col + 1] = v0, v1

    def load1(arr, row, col):
        return arr[row, col]

    def store1(arr, row, col, v):
        arr[row, col] = v

    # flat index -> [row, column]: each element on its own, since a float4 may straddle two rows
    # (one line per function, so that the access log can tell wide accesses from scalar ones)
    def load4_flat(arr, i):
        n = arr.shape[1]
        return arr[divmod(i, n)], arr[divmod(i + 1, n)], arr[divmod(i + 2, n)], arr[divmod(i + 3, n)]

    def store4_flat(arr, i, v0, v1, v2, v3):
        n = arr.shape[1]
        arr[divmod(i, n)], arr[divmod(i + 1, n)], arr[divmod(i + 2, n)], arr[divmod(i + 3, n)] = v0, v1, v2, v3

    def load1_flat(arr, i):
        return arr[divmod(i, arr.shape[1])]

    def store1_flat(arr, i, v):
        arr[divmod(i, arr.shape[1])] = v

else:
    from llvmlite import ir
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    def _vector_pointer(context, builder, sig, args, width=4):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:3], sig.args[1:3])]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
        vec = ir.VectorType(ir.FloatType(), width)
        return builder.bitcast(ptr, vec.as_pointer(ptr.type.addrspace))

    def _check(arr, row, col):
        if not (isinstance(arr, types.Array) and arr.dtype == types.float32 and arr.ndim == 2):
            raise TypeError("load4/store4 take a 2-D float32 array")
        if not (isinstance(row, types.Integer) and isinstance(col, types.Integer)):
            raise TypeError("load4/store4 take integer indices")

    @intrinsic
    def load4(typingctx, arr, row, col):
        _check(arr, row, col)
        sig = types.UniTuple(types.float32, 4)(arr, row, col)

        def codegen(context, builder, sig, args):
            v = builder.load(_vector_pointer(context, builder, sig, args), align=16)
            items = [builder.extract_element(v, ir.Constant(ir.IntType(32), i)) for i in range(4)]
            return context.make_tuple(builder, sig.return_type, items)

        return sig, codegen

    @intrinsic
    def store4(typingctx, arr, row, col, v0, v1, v2, v3):
        _check(arr, row, col)
        sig = types.void(arr, row, col, v0, v1, v2, v3)  # values cast to float32 below

        def codegen(context, builder, sig, args):
            vec = ir.Constant(ir.VectorType(ir.FloatType(), 4), ir.Undefined)
            for i, (v, t) in enumerate(zip(args[3:], sig.args[3:])):
                vec = builder.insert_element(vec, context.cast(builder, v, t, types.float32),
                                             ir.Constant(ir.IntType(32), i))
            builder.store(vec, _vector_pointer(context, builder, sig, args), align=16)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def load2(typingctx, arr, row, col):
        _check(arr, row, col)
        sig = types.UniTuple(types.float32, 2)(arr, row, col)

        def codegen(context, builder, sig, args):
            v = builder.load(_vector_pointer(context, builder, sig, args, 2), align=8)
            items = [builder.extract_element(v, ir.Constant(ir.IntType(32), i)) for i in range(2)]
            return context.make_tuple(builder, sig.return_type, items)

        return sig, codegen

    @intrinsic
    def store2(typingctx, arr, row, col, v0, v1):
        _check(arr, row, col)
        sig = types.void(arr, row, col, v0, v1)

        def codegen(context, builder, sig, args):
            vec = ir.Constant(ir.VectorType(ir.FloatType(), 2), ir.Undefined)
            for i, (v, t) in enumerate(zip(args[3:], sig.args[3:])):
                vec = builder.insert_element(vec, context.cast(builder, v, t, types.float32),
                                             ir.Constant(ir.IntType(32), i))
            builder.store(vec, _vector_pointer(context, builder, sig, args, 2), align=8)
            return context.get_dummy_value()

        return sig, codegen

    def _scalar_pointer(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:3], sig.args[1:3])]
        return cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)

    @intrinsic
    def load1(typingctx, arr, row, col):
        _check(arr, row, col)
        sig = types.float32(arr, row, col)

        def codegen(context, builder, sig, args):
            return builder.load(_scalar_pointer(context, builder, sig, args), align=4)

        return sig, codegen

    @intrinsic
    def store1(typingctx, arr, row, col, v):
        _check(arr, row, col)
        sig = types.void(arr, row, col, v)

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[3], sig.args[3], types.float32)
            builder.store(value, _scalar_pointer(context, builder, sig, args), align=4)
            return context.get_dummy_value()

        return sig, codegen

    def _check_flat(arr, i):
        if not (isinstance(arr, types.Array) and arr.dtype == types.float32 and arr.layout == "C"):
            raise TypeError("load4_flat/store4_flat/load1_flat/store1_flat take a C-contiguous float32 array")
        if not isinstance(i, types.Integer):
            raise TypeError("load4_flat/store4_flat/load1_flat/store1_flat take an integer index")

    def _flat_pointer(context, builder, sig, args):
        """Pointer to element i of the array's data, counted row-major (C-contiguous arrays)."""
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        idx = context.cast(builder, args[1], sig.args[1], types.intp)
        return builder.gep(ary.data, [idx], inbounds=True)

    @intrinsic
    def load4_flat(typingctx, arr, i):
        _check_flat(arr, i)
        sig = types.UniTuple(types.float32, 4)(arr, i)

        def codegen(context, builder, sig, args):
            ptr = _flat_pointer(context, builder, sig, args)
            vec = ir.VectorType(ir.FloatType(), 4)
            v = builder.load(builder.bitcast(ptr, vec.as_pointer(ptr.type.addrspace)), align=16)
            items = [builder.extract_element(v, ir.Constant(ir.IntType(32), e)) for e in range(4)]
            return context.make_tuple(builder, sig.return_type, items)

        return sig, codegen

    @intrinsic
    def store4_flat(typingctx, arr, i, v0, v1, v2, v3):
        _check_flat(arr, i)
        sig = types.void(arr, i, v0, v1, v2, v3)

        def codegen(context, builder, sig, args):
            vec = ir.Constant(ir.VectorType(ir.FloatType(), 4), ir.Undefined)
            for e, (v, t) in enumerate(zip(args[2:], sig.args[2:])):
                vec = builder.insert_element(vec, context.cast(builder, v, t, types.float32),
                                             ir.Constant(ir.IntType(32), e))
            ptr = _flat_pointer(context, builder, sig, args)
            builder.store(vec, builder.bitcast(ptr, vec.type.as_pointer(ptr.type.addrspace)), align=16)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def load1_flat(typingctx, arr, i):
        _check_flat(arr, i)
        sig = types.float32(arr, i)

        def codegen(context, builder, sig, args):
            return builder.load(_flat_pointer(context, builder, sig, args), align=4)

        return sig, codegen

    @intrinsic
    def store1_flat(typingctx, arr, i, v):
        _check_flat(arr, i)
        sig = types.void(arr, i, v)

        def codegen(context, builder, sig, args):
            value = context.cast(builder, args[2], sig.args[2], types.float32)
            builder.store(value, _flat_pointer(context, builder, sig, args), align=4)
            return context.get_dummy_value()

        return sig, codegen


# every value load4 and load1 return is a float32 (the GPU versions take float32 arrays only):
# @unrolled stores them into float32 register arrays without a cast (gemm_lessons/core/unroll.py)
load4.result_type = "float32"
load2.result_type = "float32"
load1.result_type = "float32"
load4_flat.result_type = "float32"
load1_flat.result_type = "float32"


def require_aligned_bases(*named_arrays, boundary=16):
    """ValueError unless each (name, array)'s data starts on a ``boundary``-byte boundary (a fresh
    allocation does; a view starting at row 1 of a larger array generally does not)."""
    if backend.SIMULATOR:  # the simulator's host memory: its alignment does not matter
        return
    for name, a in named_arrays:
        if a.__cuda_array_interface__["data"][0] % boundary:
            raise ValueError(f"{name} does not start on a {boundary}-byte boundary (a view into a larger array?): "
                             f"the {boundary}-byte accesses need a freshly allocated array (cuda.device_array).")


def require_wide_alignment(*named_arrays):
    """ValueError unless every row of every array starts on a 16-byte boundary."""
    for name, a in named_arrays:
        if a.shape[1] % 4:
            raise ValueError(
                f"this kernel moves 4 floats (16 bytes) at a time, so every row must start on a "
                f"16-byte boundary: {name} has {a.shape[1]} columns, not a multiple of 4. "
                "Use an earlier rung (e.g. ladder.SGEMM['reg2d']), or pad the matrices.")
    require_aligned_bases(*named_arrays)
