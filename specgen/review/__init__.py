"""Reviewing a spec change: what changed on the wire, whom it breaks, and the code that follows."""
