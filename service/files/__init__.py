"""Small file-system utilities both sides share (durable writes: temp file, fsync, rename)."""
