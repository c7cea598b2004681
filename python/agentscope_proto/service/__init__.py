"""The gRPC FormatterService: servicer, server assembly and status mapping."""

from .server import FormatterServicer, ServerConfig, build_server, provider_name, serve

__all__ = ["FormatterServicer", "ServerConfig", "build_server", "provider_name", "serve"]
