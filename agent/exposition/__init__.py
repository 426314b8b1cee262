"""Prometheus exposition: collectors over state already computed, and the HTTP server."""
