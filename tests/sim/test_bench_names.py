"""sim/'s naming rule (sim/__init__.py), read from the sources: a
``cocotb_*`` module holds cocotb tests, a ``tb_*`` module none, and every
module with a cocotb test outside ``conformance/`` is a ``cocotb_*``."""

import ast
import pathlib

SIM = pathlib.Path(__file__).resolve().parents[2] / "sim"


def _cocotb_tests(path):
    """Functions of ``path`` decorated ``cocotb.test(...)`` or ``cocotb.parametrize(...)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                call = d.func if isinstance(d, ast.Call) else d
                if isinstance(call, ast.Attribute) and isinstance(call.value, ast.Name) \
                        and call.value.id == "cocotb" and call.attr in ("test", "parametrize"):
                    found.append(node.name)
    return found


def test_cocotb_modules_hold_the_tests_and_tb_modules_none():
    bad = []
    for path in sorted(SIM.rglob("*.py")):
        if "conformance" in path.relative_to(SIM).parts:
            continue
        tests = _cocotb_tests(path)
        if path.name.startswith("tb_") and tests:
            bad.append(f"{path.name}: a tb_ module with cocotb tests {tests}")
        if path.name.startswith("cocotb_") and not tests:
            bad.append(f"{path.name}: a cocotb_ module without a cocotb test")
        if tests and not path.name.startswith("cocotb_"):
            bad.append(f"{path.name}: cocotb tests {tests} outside a cocotb_ module")
    assert not bad, "\n".join(bad)
