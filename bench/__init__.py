"""Benchmarks (not tests): run as ``python -m bench.<name>`` against a dedicated database."""
