"""Generated from proto/. Do not edit; run `make generate`."""
