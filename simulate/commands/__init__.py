"""The ``aimc-pipeline`` subcommands of :mod:`simulate`, one module per subcommand."""
