"""suites."""
