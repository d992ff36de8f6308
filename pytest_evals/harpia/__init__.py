"""HarpIA Lab input, output and log files."""
