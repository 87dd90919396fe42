"""The suite's scheduling works as the Makefile asks: under ``--dist
loadgroup`` the tests of one ``xdist_group`` go to one worker.

The conformance benches rely on it (their tests of one parameter set
share one simulation): without it a second worker waits on the first's
lock and the suite's wall time grows by every such simulation.
pytest-xdist marks a grouped test by appending ``@<group>`` to its node
id; some pytest releases keep the id where xdist does not write it.
"""

import pytest


@pytest.mark.xdist_group("scheduling_probe")
def test_grouped_tests_carry_their_group(request):
    config = request.config
    # (on a worker, pytest-xdist keeps ``--dist loadgroup`` as ``option.loadgroup``)
    if not hasattr(config, "workerinput") or not getattr(config.option, "loadgroup", False):
        pytest.skip("runs only on a pytest-xdist worker under --dist loadgroup")
    assert request.node.nodeid.endswith("@scheduling_probe"), (
        f"{request.node.nodeid}: pytest-xdist did not group this test; "
        "check the pytest / pytest-xdist pins in pyproject.toml")
