"""`python -m localeval` runs the CLI."""

from .cli import main

main()
