"""The decoder's steps, one module per part of the packet (see ibwire.decode)."""
