"""Adapters for agents built on frameworks: each a module importing its framework (an extra of
convy's), which nothing else in convy imports."""
