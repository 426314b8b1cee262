"""A real local Apache Kafka, and the Kafka Streams fixture app, for the demo and the tests.

Artifacts come from Maven Central, pinned by version, cached outside the
repository (see :mod:`agent.embedded.cache`); processes are real JVMs that
ksmon starts and always stops.
"""
