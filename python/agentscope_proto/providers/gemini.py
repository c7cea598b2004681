"""Placeholder while the gemini module is being written; replaced before commit."""

from typing import Any


class _Pending:
    name = "gemini"

    def __getattr__(self, attr: str) -> Any:
        raise NotImplementedError("gemini provider is being written")


PROVIDER: Any = _Pending()
