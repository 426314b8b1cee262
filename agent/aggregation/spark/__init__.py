"""The Spark edge of the job: its session, its input (the snapshot topic or a spool
directory, waited for until it exists), the stateful operator that runs the judging
core per bucket of groups, where buckets fall among shuffle partitions, and the
checkpoint directory. The only place, with ``job``, that imports pyspark.
"""
