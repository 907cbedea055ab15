"""InvalidArgument's two texts: its message keeps each rule to MAX_TEXT characters (an answer
on the wire stays small), `whole` keeps every word for a command's own error, and both say how
many violations were left out."""

from himga.errors import MAX_TEXT, FieldViolation, InvalidArgument


def test_the_message_is_cut_and_whole_is_not() -> None:
    rule = "not an option (its options: " + ", ".join(f"option_{n}" for n in range(40)) + ")"
    error = InvalidArgument("options.bogus", rule)
    assert len(rule) > MAX_TEXT and rule not in str(error) and str(error).endswith("…")
    assert error.whole() == f"options.bogus: {rule}"


def test_both_say_what_was_left_out() -> None:
    error = InvalidArgument([FieldViolation("a", "bad"), FieldViolation("b", "bad")], more=3)
    assert error.whole() == "a: bad; b: bad; and 3 more"
    assert str(error).endswith("and 3 more")
    unchecked = InvalidArgument("a", "bad", unchecked=True)
    assert unchecked.whole() == "a: bad; and more: the request was not checked to its end"
