"""worker."""
