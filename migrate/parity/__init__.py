"""Numerical parity between a torch program and its MindSpore conversion, and weight conversion."""
