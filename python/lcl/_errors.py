"""The one error type of the package's loaders, with lcl's one-line messages."""
from __future__ import annotations

import os
from typing import Union

PathLike = Union[str, "os.PathLike[str]"]


class LCLFileError(ValueError):
    """A file lcl wrote does not fit what it is used with.

    The message is one line, as lcl's own errors are: it names the file and
    what differs (``plan/epoch-003.npy: matrix is 9×9, want 10×10 (...)``).
    It is a :class:`ValueError`, so code that catches those catches it too.
    """


def quote(s: object) -> str:
    """``s`` as text safe to put into a one-line message.

    Plain names pass unchanged; a name holding a newline, a control
    character or a quote is written as Python writes a string literal, so
    that a file name can never forge a second line of output.
    """
    text = os.fspath(s) if isinstance(s, os.PathLike) else str(s)
    if text.isprintable() and '"' not in text and "'" not in text and text.strip() == text and text:
        return text
    return repr(text)


def fail(path: PathLike, what: str) -> LCLFileError:
    """An :class:`LCLFileError` saying ``PATH: what``, on one line."""
    line = f"{quote(path)}: {what}".replace("\n", "\\n").replace("\r", "\\r")
    return LCLFileError(line)
