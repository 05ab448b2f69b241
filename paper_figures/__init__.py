"""The paper's figures, one module each, and the ``aimc-pipeline`` command dispatcher."""

__all__: list[str] = []
