"""The one exception type that reaches users as a one-line message."""


class TenforgeError(Exception):
    """Bad input or an unusable environment.

    The message is one line that names what was wrong and what would be right
    (for example the valid choices). The CLI prints it and exits with status 2;
    nothing may have been half-written to the store when it is raised.
    """
