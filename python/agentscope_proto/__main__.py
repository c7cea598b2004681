"""`python -m agentscope_proto`: the `agentscope-proto` command."""

from .cli import main

main()
