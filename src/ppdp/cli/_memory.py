"""Running out of memory ends a command in one line that says so and what to try, whichever
library noticed first, and a command under an address-space limit (``ulimit -v``,
``prlimit --as``) is set up to stay within it, or to fail early and cleanly.

Under such a limit memory runs out in many places, not only as Python's MemoryError: a shared
library whose pages cannot be mapped (ImportError "failed to map segment from shared object"),
a thread whose stack cannot be reserved (RuntimeError "can't start new thread"), Polars' compiled
core that could not be loaded (Polars then only warns, and fails later with NameError or
AttributeError), Arrow's own ArrowMemoryError (a MemoryError). `ran_out_of_memory` recognises
them all.

Some failures cannot be caught at all, so `within_limit` avoids them before any work starts:
below `MIN_ADDRESS_SPACE` nothing is loaded; OpenBLAS (loaded by numpy and SciPy) retries its
first 32 MB buffer forever when it cannot have it, so its libraries are loaded first, while the
address space is still free; and every thread of a pool reserves its stack and allocator arenas,
so under a limit Polars, Arrow and OpenBLAS run fewer threads and glibc's malloc keeps as many
arenas (the releases do not depend on how many).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import resource
import sys

_GIB = 1 << 30
MAPPING_FAILED = ("failed to map segment from shared object", "cannot allocate memory")
"""What the dynamic loader (dlopen) says when the address space is exhausted."""

THREAD_FAILED = ("can't start new thread", "failed to launch worker thread")
"""What Python's threading and Arrow's thread pool say when a thread's stack cannot be had."""

MIN_ADDRESS_SPACE = _GIB
"""Below this limit a command is refused before it loads anything: numpy, Arrow, SciPy and
Polars alone map about 0.75 GB, and a load that fails part way leaves the interpreter in states
that end in tracebacks or aborts, not errors."""

BASE_ADDRESS_SPACE = 2 * _GIB
"""Address space the libraries reserve before a row is read (numpy, Arrow, Polars and SciPy map
about 1.3 GB and their allocators reserve more): the first thread of a pool is allowed within
it, each further one needs `THREAD_ADDRESS_SPACE`."""

THREAD_ADDRESS_SPACE = _GIB // 2
"""Address space one more worker thread may reserve: its stack, an allocator arena of glibc
(64 MB) and of jemalloc, OpenBLAS's buffer (32 MB), its share of a batch."""

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter for the most malloc arenas (malloc.h)."""


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""mallopt's parameters (malloc.h)."""

MMAP_THRESHOLD = 32 << 20
"""The largest block glibc takes from its heaps rather than by mapping it (its maximum)."""

TRIM_THRESHOLD = 256 << 20
"""Free memory glibc keeps at the top of its heap before giving it back to the system."""


def address_space_limit() -> int | None:
    """The soft limit on this process's address space in bytes, or None when unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def threads_within(limit: int) -> int:
    """How many worker threads a pool may run under an address-space limit of ``limit``."""
    return max(1, min(os.cpu_count() or 1, 1 + (limit - BASE_ADDRESS_SPACE)
                      // THREAD_ADDRESS_SPACE))


def within_limit() -> None:
    """Under an address-space limit: fewer pool threads (unless set in the environment), and
    the native libraries loaded now, before the command's work, so that one that does not fit
    fails here (`ran_out_of_memory` recognises how) and OpenBLAS never waits for memory that
    will not come. Nothing without a limit."""
    limit = address_space_limit()
    if limit is None:
        return
    if limit < MIN_ADDRESS_SPACE:
        raise MemoryError("the address-space limit leaves no room for ppdp's libraries")
    threads = str(threads_within(limit))
    # Read by the libraries when they load: set before the imports below.
    os.environ.setdefault("POLARS_MAX_THREADS", threads)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", threads)
    _limit_malloc_arenas(int(threads))
    # Imported here, not at start-up: only a command under a limit loads them before its work.
    import numpy  # noqa: F401 - loads numpy's OpenBLAS
    import pyarrow
    import scipy.linalg  # noqa: F401 - loads SciPy's OpenBLAS

    pyarrow.set_cpu_count(int(threads))
    pyarrow.set_io_thread_count(int(threads))
    import polars  # noqa: F401

    if not polars_loaded():
        raise MemoryError("Polars' compiled library could not be loaded")


def reuse_freed_memory() -> None:
    """Have glibc's malloc keep arrays of up to 32 MB in its heaps and reuse them, instead of
    asking the kernel for new memory for each (which it must clear): the engines cut their work
    into chunks whose temporaries are of that size (`ppdp.workers.MAX_CHUNK_ROWS`), and each was
    new memory, because malloc maps anew every block as large as the largest it has freed.
    Measured on 10^7 rows of sdr in memory: the quota passes took 2,400 page faults instead of
    28,000, and half the CPU. Nothing under an address-space limit, where memory kept would
    count against it, where the C library is not glibc, or where ``MALLOC_MMAP_THRESHOLD_`` says
    otherwise."""
    if (address_space_limit() is not None or "MALLOC_MMAP_THRESHOLD_" in os.environ
            or platform.libc_ver()[0] != "glibc"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def _limit_malloc_arenas(arenas: int) -> None:
    """At most ``arenas`` glibc malloc arenas (each thread that allocates may otherwise reserve
    one of 64 MB: 0.55 GB of the address space of a streaming publish of 3 10^6 rows on two
    threads); nothing where the C library is not glibc or is told by ``MALLOC_ARENA_MAX``."""
    if "MALLOC_ARENA_MAX" in os.environ or platform.libc_ver()[0] != "glibc":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(M_ARENA_MAX, arenas)


def polars_loaded() -> bool:
    """False when polars was imported without its compiled core (it then only warns)."""
    # polars replaces its module ``polars._plr`` by the compiled one; a failed load leaves
    # no module of that name.
    return "polars" not in sys.modules or "polars._plr" in sys.modules


def ran_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) is memory running out."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _is_memory(current):
            return True
        # As a traceback shows the chain: a context is hidden by ``raise ... from None``.
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__)
    # Polars without its compiled core (under a limit: it could not be mapped) fails wherever
    # it is first used, with one of these.
    return (address_space_limit() is not None and not polars_loaded()
            and isinstance(error, NameError | AttributeError | ImportError))


def _is_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    text = str(error).lower()
    if any(sign in text for sign in THREAD_FAILED):
        return True
    if isinstance(error, OSError) and error.errno == errno.ENOMEM:
        return True
    return isinstance(error, ImportError | OSError) and any(
        sign in text for sign in MAPPING_FAILED)


def memory_message() -> str:
    """The one line of a command that ran out of memory: what happened and what to try."""
    limit = address_space_limit()
    where = "" if limit is None else (
        f" within its address-space limit of {limit / 1e9:.3g} GB (ulimit -v)")
    return (f"ppdp ran out of memory{where}: try --engine streaming with a smaller --batch-rows, "
            f"a sample or fewer columns, or more memory"
            f"{'' if limit is None else ' (a higher limit)'}")
