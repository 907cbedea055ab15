"""The one error the dataset loaders raise, so callers can tell bad data from bugs."""

from himga.errors import HimgaError


class DatasetError(HimgaError, ValueError):
    """A dataset that cannot be loaded: unknown name, missing file, or content of the wrong shape.

    The message names the file and, where there is one, the place inside it (`[2].qa[5].question`).
    """
