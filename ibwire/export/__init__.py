"""Part of ibwire; see docs/architecture.md."""
