"""collection."""
