"""What lessons show: per-lesson facts, tables and figures, the Measure step, the exercises and their checks."""
