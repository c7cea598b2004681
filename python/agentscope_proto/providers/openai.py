"""Placeholder while the openai module is being written; replaced before commit."""

from typing import Any


class _Pending:
    name = "openai"

    def __getattr__(self, attr: str) -> Any:
        raise NotImplementedError("openai provider is being written")


PROVIDER: Any = _Pending()
