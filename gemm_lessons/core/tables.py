"""Tables as text: markdown for the notebooks and the README, aligned columns for the console.

``align`` has one letter per column: "l" (left, the default) or "r" (right, for numbers).
Cells are used as they are (``str()`` of each), so the caller formats its numbers.
"""

RULE = {"l": "---", "r": "---:"}


def _check(headers, rows, align):
    align = align or "l" * len(headers)
    if len(align) != len(headers) or any(len(r) != len(headers) for r in rows):
        raise ValueError(f"{len(headers)} headers, {len(align)} alignments, rows of {sorted({len(r) for r in rows})} cells")
    return align


def markdown(headers, rows, align=None):
    """| header | ... | then |---|---:| then one line per row."""
    align = _check(headers, rows, align)
    lines = ["| " + " | ".join(str(c) for c in row) + " |" for row in [headers, *rows]]
    lines.insert(1, "|" + "|".join(RULE[a] for a in align) + "|")
    return "\n".join(lines)


def text(headers, rows, align=None):
    """The same table as plain text: columns padded to their widest cell, two spaces apart."""
    align = _check(headers, rows, align)
    cells = [[str(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)).rstrip()
                     for row in cells)
