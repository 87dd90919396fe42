"""Command-line plumbing shared by every entry point of the project."""

import argparse

__all__ = ["ArgumentParser"]


class ArgumentParser(argparse.ArgumentParser):
    """An ``argparse`` parser whose errors are one line naming the bad value
    (``prog: error: ...``, exit status 2), without the usage block."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")
