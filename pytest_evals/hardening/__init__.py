"""hardening."""
