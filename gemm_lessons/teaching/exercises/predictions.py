"""Predict, then measure: a student's prediction shown next to the measurement."""
from dataclasses import dataclass


def _shown(x):
    """3 significant digits, zeros kept (1.00, not 1), whole numbers with thousands separators."""
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:#.3g}"


@dataclass
class Prediction:
    what: str
    predicted: object
    measured: float
    source: str

    def _text(self):
        if self.predicted is None or self.predicted is Ellipsis:
            return f"no prediction written yet; {self.what}: {_shown(self.measured)} ({self.source})."
        try:
            p = float(self.predicted)
        except (TypeError, ValueError):
            return f"your prediction {self.predicted!r} is not a number; {self.what}: {_shown(self.measured)} ({self.source})."
        if self.measured != self.measured:
            return f"you predicted {_shown(p)}; {self.what} has no measurement here ({self.source})."
        off = 100 * (p / self.measured - 1) if self.measured else float("inf")
        return (f"you predicted {_shown(p)}; {self.what}: {_shown(self.measured)} ({self.source}). "
                f"Your prediction is {abs(off):.0f}% {'above' if off > 0 else 'below'} it.")

    def __repr__(self):
        return self._text()

    def _repr_markdown_(self):
        return "**Predicted vs measured.** " + self._text()


def compare_prediction(predicted, measured, what, source):
    """Show a student's prediction next to the measurement (``source`` says where it was measured:
    on this GPU now, or recorded on which device and when)."""
    return Prediction(what, predicted, float(measured), source)
