"""The planted answers of the exercises of lessons 04 to 06 (tests/data/planted/: test_planted.py
says what they are and why they are split over files)."""
import pytest

from test_planted import IDS, check_planted, planted_of


@pytest.mark.parametrize("exercise_id,kind,name", planted_of("04_06"), ids=IDS)
def test_planted_answer(exercise_id, kind, name):
    check_planted(exercise_id, kind, name)
