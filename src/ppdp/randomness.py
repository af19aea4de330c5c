"""How random generators are made: from OS entropy unless a seed is given.

A seed makes a run reproducible and is meant for experiments and tests; a release meant for
the public should be made without one (the default), so that nobody can replay the draws.
"""

from __future__ import annotations

import numpy as np

RandomState = int | np.random.Generator | np.random.SeedSequence | None


def make_rng(random_state: RandomState = None) -> np.random.Generator:
    """A numpy Generator: fresh OS entropy for None, seeded for an int, or the one given."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, bool) or not (
        random_state is None or isinstance(random_state, int | np.integer | np.random.SeedSequence)
    ):
        raise TypeError(f"random_state must be None, an int, a SeedSequence or a numpy "
                        f"Generator, not {type(random_state).__name__}")
    return np.random.default_rng(random_state)

