"""Keyed randomness: every random draw a pure function of (key, stream, row id).

A release is made from one 128-bit *key*. Each step of a mechanism draws from its own named
*stream* (``"perturb"``, ``"rank"``, ``"noise"``, ...), whose Philox key is a keyed BLAKE2b
hash of the stream's name under the release key. Row ``r``'s draws are the outputs of that
stream's counter at positions ``r * per_row`` onward, so a batch of rows ``[start, start + n)``
draws exactly what the same rows draw in any other batching or order of processing: the
in-memory and streaming executors publish identical releases from the same key.

Philox-4x64 with 10 rounds (numpy's ``Philox``) is a counter-based generator built from a
weakened block cipher (Salmon et al., SC 2011); it passes the statistical test batteries but is
not a cryptographic cipher. What protects a release is that the key is secret and never
written out, and the stream keys are derived through BLAKE2b, a PRF, so one stream's outputs say
nothing about another's key. An adversary would need to invert Philox's outputs (perturbed
values are only a few bits of each) to learn a stream key; we judge that out of reach for this
use, as the papers' own randomness (a seeded C++ generator) is.

``make_key(None)`` takes 128 bits from the operating system (`secrets`), the default for every
release. An integer seed derives the key (numpy's SeedSequence), for experiments and tests.
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np

from ppdp.randomness import RandomState

KEY_BITS = 128
_UNIT = 2.0 ** -53


def make_key(random_state: RandomState = None) -> int:
    """The release key: fresh OS entropy for None, derived from an int seed, a SeedSequence or
    (for callers that hold one) 128 bits drawn from a numpy Generator."""
    if random_state is None:
        return secrets.randbits(KEY_BITS)
    words: np.ndarray  # two 64-bit words of the key
    if isinstance(random_state, np.random.Generator):
        words = random_state.integers(0, 2 ** 64, size=2, dtype=np.uint64)
    elif isinstance(random_state, np.random.SeedSequence):
        words = random_state.generate_state(2, np.uint64)
    elif isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        words = np.random.SeedSequence(int(random_state)).generate_state(2, np.uint64)
    else:
        raise TypeError(f"random_state must be None, an int, a SeedSequence or a numpy "
                        f"Generator, not {type(random_state).__name__}")
    return int(words[0]) << 64 | int(words[1])


def stream_key(key: int, stream: str) -> int:
    """The 128-bit Philox key of one stream: BLAKE2b of its name, keyed by the release key."""
    digest = hashlib.blake2b(stream.encode(), key=key.to_bytes(KEY_BITS // 8, "big"),
                             digest_size=16).digest()
    return int.from_bytes(digest, "big")


class KeyedStream:
    """The draws of one named stream under a release key, addressed by row id."""

    def __init__(self, key: int, stream: str) -> None:
        self._philox_key = stream_key(key, stream)
        self.stream = stream

    def __repr__(self) -> str:
        # The key stays out of every representation.
        return f"KeyedStream({self.stream!r})"

    def raw(self, start: int, count: int, per_row: int = 1) -> np.ndarray:
        """64 random bits per draw for rows ``start .. start + count - 1``: shape (count,), or
        (count, per_row) when ``per_row > 1``."""
        first = start * per_row
        # Philox yields four 64-bit words per counter value; the generator's first output comes
        # from counter + 1, the same in every batch, so position p is always word p % 4 of
        # counter p // 4 + 1.
        bits = np.random.Philox(key=self._philox_key, counter=first // 4)
        skip = first % 4
        words = bits.random_raw(count * per_row + skip)[skip:]
        return words if per_row == 1 else words.reshape(count, per_row)

    def uniform(self, start: int, count: int, per_row: int = 1) -> np.ndarray:
        """Uniform floats in [0, 1) (53 bits) for rows ``start .. start + count - 1``."""
        words = self.raw(start, count, per_row)
        words >>= np.uint64(11)
        return words * _UNIT

    def generator(self, index: int = 0) -> np.random.Generator:
        """A numpy Generator for work on one block or summary (``index``), not per row."""
        return np.random.Generator(np.random.Philox(key=stream_key(self._philox_key, str(index))))
