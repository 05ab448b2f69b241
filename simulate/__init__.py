"""Stochastic simulation of digital and analog SGD through pipelines, and pipeline timelines."""

__all__: list[str] = []
