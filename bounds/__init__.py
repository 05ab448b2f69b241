"""Numeric use of the theory for given hardware: parameters, presets, evaluation, planning."""

__all__: list[str] = []
