"""specgen: wire-protocol specifications in, tested Python codecs out."""

__version__ = "0.1.0"
