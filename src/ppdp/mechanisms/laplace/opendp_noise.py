"""Discrete Laplace noise drawn by OpenDP's vetted sampler from OS entropy: the noise of an
unseeded Laplace session (Canonne, Kamath and Steinke 2020; OpenDP's sampler avoids the
floating-point attacks on the continuous one, Mironov 2012).

OpenDP is the ``laplace`` extra, and takes seconds to import: it is imported when a sampler is
made (only a session without a seed makes one), and without it that is one line naming the
extra."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ppdp.errors import MissingDependencyError


def discrete_laplace(scale: float) -> Callable[[int], np.ndarray]:
    """A sampler of ``size`` independent draws of discrete Laplace noise of this scale."""
    # A third-party import deferred to here, not a cycle: importing OpenDP takes seconds
    # (5-9 s measured) and only sessions without a seed need it.
    try:
        import opendp.prelude as dp
    except ImportError:
        raise MissingDependencyError(
            "Laplace counts without a seed draw their noise with OpenDP, which is not "
            "installed: pip install 'ppdp[laplace]'") from None
    dp.enable_features("contrib")
    # 64-bit integers: OpenDP's default (T=int) is 32-bit and saturates at 2^31, which a scale
    # above about 10^7 reaches.
    sampler = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")),
                                dp.l1_distance(T="i64"), scale=scale)

    def draw(size: int) -> np.ndarray:
        return np.asarray(sampler([0] * size), dtype=np.int64)

    return draw
