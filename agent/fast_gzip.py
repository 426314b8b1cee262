"""gzip members written with Intel's ISA-L (the ``isal`` package) instead of zlib.

The agent gzips a lot of text that changes at every poll: its whole /metrics
body and every batch of snapshots it produces, both large on a large cluster.
With zlib that was one of the larger shares of its CPU; ISA-L's level 1 takes
far less CPU than zlib's fastest level for the exposition text, and than level 6
(Kafka's Java producer's default) for the snapshots, which come out somewhat
larger.

The output is ordinary gzip (RFC 1952): Prometheus, Kafka's consumers and
Python's ``gzip`` read it. Decompressing stays with zlib: only a scraper that
does not accept gzip makes the agent decompress.
"""

from isal import isal_zlib

# ISA-L's levels run from 0 to 3. Level 1 is as fast as 0 and compresses better;
# 3 costs much more CPU for output barely smaller.
LEVEL = 1
_GZIP_WBITS = 16 + isal_zlib.MAX_WBITS  # zlib's way of asking for a gzip member


def packer() -> isal_zlib.Compress:
    """A compressor whose ``compress`` pieces and ``flush`` make one gzip member."""
    return isal_zlib.compressobj(LEVEL, isal_zlib.DEFLATED, _GZIP_WBITS)


def gzip_member(data: bytes | bytearray) -> bytes:
    """``data`` as one gzip member (no file name, no time: the same bytes each time)."""
    compressor = packer()
    return compressor.compress(data) + compressor.flush()
