"""Placeholder sub-plugin (being written)."""
