"""Small explanatory figures (the "Idea" step of each lesson), drawn from the same index
arithmetic the kernels use, and the pictures of what the instruments find (bank maps); one
module per subject, every figure importable from here."""
from gemm_lessons.teaching.figures.access import (
    SECTOR_BYTES, CACHE_LINE_BYTES, sectors, cache_lines, naive_warp_addresses, naive_warp_map, bytes_in_flight,
    naive_transpose_warp_addresses, transpose_warp_access)
from gemm_lessons.teaching.figures.tiles import (
    tiles, outer_product, thread_tile_rows_cols, register_block, register_column, transposed_tile,
    double_buffer_timeline, warp_tiles, block_order)
from gemm_lessons.teaching.figures.banks import (
    lane_label, bank_map, tile_column_banks, bank_explorer)
from gemm_lessons.teaching.figures.machine import (
    execution_model, memory_hierarchy, latency_curve, issue_timeline, LIMITER_LABELS, limiter_bars)

__all__ = ["SECTOR_BYTES", "CACHE_LINE_BYTES", "sectors", "cache_lines", "naive_warp_addresses", "naive_warp_map",
           "bytes_in_flight", "naive_transpose_warp_addresses", "transpose_warp_access", "tiles",
           "outer_product", "thread_tile_rows_cols", "register_block", "register_column", "transposed_tile",
           "double_buffer_timeline", "warp_tiles", "block_order", "lane_label", "bank_map",
           "tile_column_banks", "bank_explorer", "execution_model", "memory_hierarchy", "latency_curve",
           "issue_timeline", "LIMITER_LABELS", "limiter_bars"]
