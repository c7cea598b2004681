"""Placeholder while the ollama module is being written; replaced before commit."""

from typing import Any


class _Pending:
    name = "ollama"

    def __getattr__(self, attr: str) -> Any:
        raise NotImplementedError("ollama provider is being written")


PROVIDER: Any = _Pending()
