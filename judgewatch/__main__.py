"""`python -m judgewatch` is the `judgewatch` command."""

from judgewatch.cli import main

main()
