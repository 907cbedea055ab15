"""Method: the parameters of the shared keyword ranking (himga.memory.ranking, whose text
defines them), the options of the in-process `keyword` memory. A module of its own, with no
import of the ranking's C core or text code, so that the registry can name it cheaply."""

from dataclasses import dataclass

from himga.errors import InvalidArgument

NEAR_TURNS = 2
OWN_WEIGHT = 1.0
NEAR_WEIGHT = 0.5
SPEAKER_BOOST = 1.0
K1 = 1.2
B = 0.75


@dataclass(frozen=True, slots=True)
class Method:
    """The method's parameters, as himga.memory.ranking names them. The memories rank with
    DEFAULT_METHOD; others exist to be compared with it (himga.eval.folds), or are given to
    the `keyword` memory as its options. Out-of-range values are InvalidArgument naming the
    parameter."""

    near_turns: int = NEAR_TURNS
    near_weight: float = NEAR_WEIGHT
    speaker_boost: float = SPEAKER_BOOST
    k1: float = K1
    b: float = B

    def __post_init__(self) -> None:
        if self.near_turns < 0:
            raise InvalidArgument("near_turns", "must be 0 or more")
        for name in ("near_weight", "speaker_boost", "k1"):
            if not getattr(self, name) >= 0:
                raise InvalidArgument(name, "must be 0 or more")
        if not 0 <= self.b <= 1:
            raise InvalidArgument("b", "must be from 0 to 1")


DEFAULT_METHOD = Method()
