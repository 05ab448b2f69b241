"""The commands of :mod:`simulate`, one module per subcommand (argparse lives here only).

- :mod:`simulate.commands.simulate`: ``aimc-pipeline simulate`` (and ``python -m simulate``);
- :mod:`simulate.commands.schedule`: ``aimc-pipeline schedule``;
- :mod:`simulate.commands.verify`: ``aimc-pipeline verify``;
- :mod:`simulate.commands.options`: the flag groups several commands share (sweep execution,
  output).
"""

__all__: list[str] = []  # a room of command modules; nothing to re-export
