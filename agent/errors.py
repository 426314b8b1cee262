"""The errors ksmon reports to a person.

Every message names the input that was wrong and what would be right, so the
CLI can print it as one line without a traceback.
"""


def first_line(error: BaseException, limit: int = 300) -> str:
    """An exception's first line (its type's name when it says nothing), at most ``limit``
    characters: Java exceptions through py4j carry whole stack traces."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:limit]


def described(error: BaseException) -> str:
    """``Type: first line``, the type once: kafka-python's errors already start with it."""
    text = first_line(error)
    name = type(error).__name__
    return text if text.startswith(name) else f"{name}: {text}"


class KsmonError(Exception):
    """Base of ksmon's own errors; ``retriable`` says whether trying again may help."""

    retriable: bool = False


class ConfigError(KsmonError):
    """A setting, file or command-line value is wrong; fix the input and run again."""


class SetupError(KsmonError):
    """Something ksmon needs from the machine is missing or wrong (Java, Maven, a port)."""


class UnreachableError(SetupError):
    """A remote service ksmon must reach (Maven Central, a broker) did not answer."""

    retriable = True
