"""Helpers shared by ksmon's test suites (fixtures live in tests/conftest.py)."""
