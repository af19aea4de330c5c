"""The streaming engine: sources that need not fit in memory, published batch by batch into a
release directory, and saved releases counted with streaming Polars aggregations.

Modules: `engine` (the engine), `rows` (row-local plans: passes, kernel per batch, rows spilled
by part and written in release order), `blocks` (group mechanisms, block by block after one
exchange), `mondrian` (Mondrian's top levels cut from histograms, small partitions in
memory), `alphabeta` (alpha-beta views, their rows spilled by rank).
"""

from ppdp.engines.streaming.engine import ENGINE, StreamingEngine, StreamingRelease

__all__ = ["ENGINE", "StreamingEngine", "StreamingRelease"]
