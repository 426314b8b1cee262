"""The aggregation job: snapshots in, findings and metrics out.

Data flow, one module per step: ``source`` (the snapshot topic or a spool
directory) -> ``operator`` (Spark's stateful operator, keyed by a bucket of
groups) -> ``bucket`` (one bucket's new snapshots: ``facts`` decoded, each
group's ``group.step``: its series' ``window`` judged by the ``rules``, then
``hysteresis``) -> ``board`` (the driver's view of every group, the cluster
rules) -> ``job`` (the ledger, the findings topic, ``exposition``: the job's
/metrics). ``replay`` runs ``bucket`` and ``board`` over recorded files.

Only ``operator``, ``job``, ``session``, ``source`` and ``kafka_package``
import pyspark; the rules and everything they need are plain Python, tested
without a JVM. The agent daemon never imports this package, and ``ksmon
explain`` only its Spark-free findings-topic reader.
"""
