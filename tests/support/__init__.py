"""What the tests share, and the benches with them: the stand-in (a real HTTP server on 127.0.0.1),
LiteLLM's proxy and a two-node Ray cluster as session fixtures, projects of fakes, a virtual clock,
the ``convy`` command run as a user runs it (``process``) and the one wait for a condition
(``waiting``). Imported as ``support.<module>`` with tests/ on the path (pyproject.toml's
``pythonpath``; a bench puts it there itself)."""
