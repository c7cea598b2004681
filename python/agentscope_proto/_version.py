"""The package version: the one place it is written (hatch reads it for the build)."""

__version__ = "0.1.0"
