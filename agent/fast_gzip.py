"""gzip members written with Intel's ISA-L (the ``isal`` package) instead of zlib.

The agent gzips a lot of text that changes at every poll: its whole /metrics
body (about 11 MB at 1,000 groups x 20 partitions) and every batch of snapshots
it produces (about 5 MB). With zlib that was one of the larger shares of its CPU.
Measured on a 2-core machine (docs/benchmarks.md, 2026-11-27):

- 7.3 MB of exposition text: zlib's fastest level 20.3 ms, ISA-L's level 1
  4.3 ms, into fewer bytes (642 KB against 713 KB);
- a poll's snapshots (5.4 MB, offsets as varied as a real cluster's) in 256 KB
  batches: zlib at level 6 (Kafka's Java producer's default) 58.7 ms and 500 KB,
  ISA-L's level 1 3.9 ms and 630 KB.

The output is ordinary gzip (RFC 1952): Prometheus, Kafka's consumers and
Python's ``gzip`` read it. Decompressing stays with zlib: only a scraper that
does not accept gzip makes the agent decompress.
"""

from isal import isal_zlib

# ISA-L's levels run from 0 to 3. Level 1 is as fast as 0 and compresses better;
# 3 took 3.5-4.5 times the CPU for snapshots a tenth smaller and /metrics text 1 %
# smaller.
LEVEL = 1
_GZIP_WBITS = 16 + isal_zlib.MAX_WBITS  # zlib's way of asking for a gzip member


def packer() -> isal_zlib.Compress:
    """A compressor whose ``compress`` pieces and ``flush`` make one gzip member."""
    return isal_zlib.compressobj(LEVEL, isal_zlib.DEFLATED, _GZIP_WBITS)


def gzip_member(data: bytes | bytearray) -> bytes:
    """``data`` as one gzip member (no file name, no time: the same bytes each time)."""
    compressor = packer()
    return compressor.compress(data) + compressor.flush()
