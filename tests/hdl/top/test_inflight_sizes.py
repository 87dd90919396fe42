"""The in-flight table at sizes that are not a power of two (contract
section 1: MAX_OUTSTANDING 4..256): the bench of
tests/hdl/top/test_arbiter_pool.py (every lookup returns the entry written for
its ID, places and ``devload`` as promised) at 20, 33 and 100 places,
where the IDs run past the first half of the ID space unevenly (the table
once lost the entries of IDs 50..63 at 100 places; at 33 the second half
holds one ID)."""

import pytest


@pytest.mark.parametrize("n, read_cycles", [(20, 1), (33, 1), (100, 2)])
def test_in_flight_table_of_any_size(n, read_cycles, test_module):
    bench = test_module("hdl/top/test_arbiter_pool.py")
    bench.test_in_flight_table_places_ids_and_entries(n, read_cycles, width=8)
