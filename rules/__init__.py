"""Migration knowledge: API mapping tables (`api/*.toml`), transforms for irregular APIs
(`transforms/`), and lint rules (`lint/`). The engine in `msmigrate` knows none of it."""
