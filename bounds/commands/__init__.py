"""The command-line commands of :mod:`bounds` (the only argparse code of the package).

- :mod:`bounds.commands.bounds`: ``aimc-pipeline bounds`` (``python -m bounds``);
- :mod:`bounds.commands.plan`: ``aimc-pipeline plan``;
- :mod:`bounds.commands.options`: the flag groups both share (problem constants, weight region).

Each command module defines ``DESCRIPTION``, ``build_parser(parser)``, ``run(args) -> int`` and
``main(argv=None) -> int``.
"""

__all__: list[str] = []  # a room of command modules; nothing to re-export
