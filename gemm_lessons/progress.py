"""A progress bar for long measurements (tqdm's, in a notebook or a terminal)."""
from tqdm.auto import tqdm


def bar(total, desc, enabled=True):
    """tqdm bar over ``total`` steps: .update() after each, .set_postfix_str(what) while on one,
    .close() at the end; ``enabled=False`` hides it."""
    return tqdm(total=total, desc=desc, disable=not enabled)
