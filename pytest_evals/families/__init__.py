"""families."""
