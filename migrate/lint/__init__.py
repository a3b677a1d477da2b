"""Static-graph lint: which code MindSpore compiles, and what in it will fail, be wrong, or be slow."""
