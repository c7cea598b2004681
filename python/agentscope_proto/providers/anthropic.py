"""Placeholder while the anthropic module is being written; replaced before commit."""

from typing import Any


class _Pending:
    name = "anthropic"

    def __getattr__(self, attr: str) -> Any:
        raise NotImplementedError("anthropic provider is being written")


PROVIDER: Any = _Pending()
