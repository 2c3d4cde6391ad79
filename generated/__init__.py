"""Generated code: one package per protocol, one sub-package per spec version."""
