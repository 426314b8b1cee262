"""The aggregation job: snapshots in, findings and metrics out.

Three parts, and the runners that wire them:

* ``spark/``: the Spark edge. ``source`` reads the snapshot topic or a spool
  directory; ``operator`` keys the records by a bucket of groups and runs the
  judging core on each bucket with its groups kept in Spark's state store.
* ``judging/``: the pure core. ``bucket`` decodes a bucket's snapshots into
  ``facts`` and steps each group (``group``: its series' ``window`` judged by the
  ``rules``, then ``hysteresis``); ``board`` folds every bucket's report into the
  driver's view of every group and runs the cluster rules.
* ``outputs/``: what the job serves and publishes: the findings topic, /metrics,
  the JSON API, quarantined snapshots.

``job`` runs the streaming query and its ledger; ``replay`` runs the same core over
recorded files without Spark; ``commands`` are the CLI's. Arrows run from the runners
to the parts and from ``spark`` and ``outputs`` to ``judging``, never back
(tests/unit/test_import_arrows.py). The agent daemon never imports this package, and
``ksmon explain`` only its Spark-free findings-topic reader.
"""
