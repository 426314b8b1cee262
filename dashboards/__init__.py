"""ksmon's Grafana dashboards, generated from code (``python -m dashboards.generate``).

The alert rules next to them (``alerts/``) are plain Prometheus rule files.
"""
