"""Placeholder while the deepseek module is being written; replaced before commit."""

from typing import Any


class _Pending:
    name = "deepseek"

    def __getattr__(self, attr: str) -> Any:
        raise NotImplementedError("deepseek provider is being written")


PROVIDER: Any = _Pending()
