"""The judging core: snapshots' facts in; findings, their events and gauges out.

Pure Python, no Spark and no I/O: ``facts`` reads one snapshot into the compact
``Poll`` the rules read; ``window`` is one series' polls up to the one judged;
``rules/`` holds one module per rule; ``group.step`` judges a group's new polls
and ``hysteresis`` opens and closes its findings; ``bucket`` does that for one
bucket of groups, ``board`` for every group the driver knows (and the cluster
rules); ``results`` are the gauge rows the outputs read; ``tuples`` and
``stored_bucket`` are how a bucket's groups are kept between batches.

Imports nothing of ``spark`` or ``outputs``.
"""
