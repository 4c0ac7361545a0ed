"""Checks of the types of arguments at the Python API, with standard exceptions.

Why here: an argument of the wrong type (`epochs=2.5`, `callbacks=[3]`) is a
caller's mistake that the standard library reports as TypeError, naming the
argument, the value and what to pass instead; tnt.Error (a RuntimeError)
stays for failures while running. Ranges the C++ core checks (epochs,
batch_size, names of losses and metrics) are not checked again here: its
tnt::ArgumentError arrives as ValueError (src/python/error_bindings.cpp),
so each rule has one source of truth.
"""
from __future__ import annotations

import numbers
from typing import Optional


def _type_name(value: object) -> str:
    return type(value).__name__


def check_int(where: str, name: str, value: object) -> int:
    """Returns `value` if it is an integer (int, numpy integer; not a bool).

    Args:
        where: The function, for the message, e.g. "fit()".
        name: The argument's name.
        value: What the caller passed.

    Returns:
        The value as an int.

    Raises:
        TypeError: `value` is not an int.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: {name} must be an int, got {value!r} (a {_type_name(value)})")
    return int(value)


def check_optional_int(where: str, name: str, value: object) -> Optional[int]:
    """As check_int, with None allowed.

    Args:
        where: The function, for the message.
        name: The argument's name.
        value: What the caller passed.

    Returns:
        The value, an int or None.

    Raises:
        TypeError: `value` is neither None nor an int.
    """
    return None if value is None else check_int(where, name, value)


def check_bool(where: str, name: str, value: object) -> bool:
    """Returns `value` if it is a bool.

    Args:
        where: The function, for the message.
        name: The argument's name.
        value: What the caller passed.

    Returns:
        The value.

    Raises:
        TypeError: `value` is not a bool.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name} must be True or False, got {value!r} "
                        f"(a {_type_name(value)})")
    return value


def check_number(where: str, name: str, value: object) -> float:
    """Returns `value` as a float if it is a real number (not a bool).

    Args:
        where: The function, for the message.
        name: The argument's name.
        value: What the caller passed.

    Returns:
        The value as a float.

    Raises:
        TypeError: `value` is not a number.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: {name} must be a number, got {value!r} "
                        f"(a {_type_name(value)})")
    return float(value)


def check_str(where: str, name: str, value: object) -> str:
    """Returns `value` if it is a str.

    Args:
        where: The function, for the message.
        name: The argument's name.
        value: What the caller passed.

    Returns:
        The value.

    Raises:
        TypeError: `value` is not a str.
    """
    if not isinstance(value, str):
        raise TypeError(f"{where}: {name} must be a str, got {value!r} (a {_type_name(value)})")
    return value
