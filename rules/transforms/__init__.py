"""Small functions for APIs a table record cannot describe. Each takes a `Site`
(msmigrate.engine) and returns the replacement expression; value transforms take
(value, site) and return an expression, a dict of MindSpore keyword arguments, or None (drop)."""
