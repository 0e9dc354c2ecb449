"""Helpers shared by several test modules (on sys.path through pytest's ``pythonpath``)."""
