"""What the job serves and publishes from the judging core's results, without Spark:
``latest`` (the newest micro-batch's view, shared by the batch thread and readers),
``job_metrics`` (the job's /metrics), ``api`` and ``api_view`` (its JSON API),
``findings_topic`` (finding events published and read back), ``quarantine``
(snapshots set aside) and ``render`` (findings for a terminal).

Imports nothing of ``spark``.
"""
