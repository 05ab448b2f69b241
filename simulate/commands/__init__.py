"""The command-line commands of :mod:`simulate` (argparse lives here only).

- :mod:`simulate.commands.simulate`: ``aimc-pipeline simulate`` (and ``python -m simulate``);
- :mod:`simulate.commands.schedule`: ``aimc-pipeline schedule``;
- :mod:`simulate.commands.options`: the flag groups several commands share (sweep execution,
  output).
"""
