"""No test asserts something that cannot fail: every ``assert`` in tests/ is
parsed (ast) and refused when its expression is a constant, an f-string, a
tuple (``assert (x, "message")`` is always true) or a comparison of two
constants."""

import ast
import pathlib

import pytest

TESTS = pathlib.Path(__file__).resolve().parent


def vacuous(test):
    """True when an assert of expression ``test`` cannot fail (or cannot pass)."""
    if isinstance(test, ast.Constant):
        return True
    if isinstance(test, (ast.JoinedStr, ast.Tuple)):
        return True
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Constant) \
        and all(isinstance(c, ast.Constant) for c in test.comparators)


def _asserts(source, name="<test>"):
    return [node for node in ast.walk(ast.parse(source, name)) if isinstance(node, ast.Assert)]


@pytest.mark.parametrize("source, expected", [
    ('assert "| a | b |"', True),
    ("assert True", True),
    ("assert 0", True),
    ('assert f"{x}"', True),
    ('assert (x == 1, "x must be 1")', True),
    ("assert 1 == 1", True),
    ('assert "a" in text', False),
    ("assert x == 1", False),
    ('assert x, "message"', False),
    ("assert not x", False),
])
def test_the_rule(source, expected):
    (node,) = _asserts(source)
    assert vacuous(node.test) is expected


def test_no_vacuous_assert_in_the_tests():
    hits = [f"{path.relative_to(TESTS)}:{node.lineno}"
            for path in sorted(TESTS.rglob("*.py"))
            for node in _asserts(path.read_text(), str(path)) if vacuous(node.test)]
    assert hits == []
