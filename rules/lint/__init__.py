"""Lint rules: one module per rule, each carrying its documentation and VALID/INVALID examples."""
