"""A progress bar for long measurements (tqdm's, in a notebook or a terminal)."""
import os

from tqdm import tqdm as text_tqdm
from tqdm.auto import tqdm

# A notebook saved with outputs (tools/refresh_outputs.py sets this) keeps a widget bar only as
# its first frame, "0%"; a text bar is saved as it ended.
TEXT_ENV = "GEMM_LESSONS_TEXT_PROGRESS"


def bar(total, desc, enabled=True):
    """tqdm bar over ``total`` steps: .update() after each, .set_postfix_str(what) while on one,
    .close() at the end; ``enabled=False`` hides it."""
    kind = text_tqdm if os.environ.get(TEXT_ENV) else tqdm
    return kind(total=total, desc=desc, disable=not enabled)
