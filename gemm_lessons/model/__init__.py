"""Models that predict from counts: FLOP, byte and load formulas, the limiter model's arithmetic,
and the occupancy calculator."""
