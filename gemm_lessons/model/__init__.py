"""Models that predict from counts: FLOP, byte and load formulas (and the limiter model's arithmetic)."""
