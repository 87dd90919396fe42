"""How a job's ranks share controllers (models/controllers.py), against the
contract's limits as its text states them and hand-worked splits: every
world size 1..130 split or refused by name, each controller serving its
count, the largest world sizes served."""

import pytest

from neuron_fabric.contract.facts import Operand
from neuron_fabric.models.controllers import (check_line_bits, controller_slots,
                                              controller_workers, largest_world,
                                              plan_controllers)


@pytest.mark.parametrize("line_bits", [64, 128, 256, 512, 1024])
@pytest.mark.parametrize("ranks", [2, 4, 6, 8, 10, 16])
def test_each_width_serves_whole_byte_segments_or_is_refused(line_bits, ranks):
    """A rank writes LINE_BITS / W bits of each line (its MemWrPtl): served
    when that is whole bytes, refused by name otherwise (only W 16 at 64 bits)."""
    workers = controller_workers(ranks)
    if line_bits // workers >= 8:
        check_line_bits(line_bits, ranks, workers)
    else:
        assert (line_bits, workers) == (64, 16)
        with pytest.raises(ValueError, match=r"FabricConfig\.line_bits=64 cannot serve"):
            check_line_bits(line_bits, ranks, workers)


@pytest.mark.parametrize("ranks, want", [(1, (4, 2)), (2, (4, 1)), (3, (8, 2)), (4, (4, 1)),
                                         (5, (16, 2)), (6, (8, 1)), (7, (16, 2)), (8, (8, 1)),
                                         (10, (16, 1)), (16, (16, 1))])
def test_slots_of_a_controller(ranks, want):
    """(W, copies): two slots a rank for an odd count, W the smallest that
    holds them, the spare slots an even number (they cancel in pairs)."""
    w, copies = controller_slots(ranks)
    assert (w, copies) == want and (w - copies * ranks) % 2 == 0


@pytest.mark.parametrize("ranks", [9, 11, 15])
def test_an_odd_controller_past_8_ranks_is_refused(ranks):
    with pytest.raises(ValueError, match="ranks_per_controller of at most 8"):
        controller_slots(ranks)


#: The level-2 count operands of contract section 5.3, as the text states
#: them: (bits a partial count, contributors a count lane, the largest total).
CONTRACT_OPERANDS = {Operand.COUNTS4: (4, 8, 120), Operand.COUNTS8: (8, 4, 1020)}


def _copies(world):
    return 2 if world % 2 else 1


def _serves(sizes, world, line_bits):
    """Whether controllers of ``sizes`` ranks can serve a job of ``world``:
    a W of 4, 8 or 16 whose segment is whole bytes holds a controller's
    slots, and with several controllers an operand of section 5.3 holds
    their counts (at most ``copies * size`` each), the contributors and the
    total ``copies * world``."""
    most = _copies(world) * max(sizes)
    if not any(w >= most and line_bits // w >= 8 for w in (4, 8, 16)):
        return False
    return len(sizes) == 1 or any(
        len(sizes) <= n and most < 2 ** bits and _copies(world) * world <= top
        for bits, n, top in CONTRACT_OPERANDS.values())


@pytest.mark.parametrize("line_bits", [64, 512])
def test_every_world_size_splits_or_is_refused(line_bits):
    """Every world size 1..130: the split holds every rank, each controller
    serves its count, no fewer controllers would serve (the fewest, as
    equal as can be); a world size no split serves is refused by name."""
    for world in range(1, 131):
        fewest = next((k for k in range(1, 9) if _serves([-(-world // k)], world, line_bits)
                       and (k == 1 or _serves([-(-world // k)] * k, world, line_bits))), None)
        if fewest is None:
            with pytest.raises(ValueError, match=rf"world size of {world} ranks at "
                                                 rf"FabricConfig\.line_bits={line_bits}"):
                plan_controllers(world, line_bits)
            continue
        split = plan_controllers(world, line_bits)
        sizes = split.sizes
        assert sum(sizes) == world and len(sizes) == fewest, (world, split)
        assert max(sizes) - min(sizes) <= 1, (world, split)
        assert split.copies == _copies(world)
        assert split.copies * max(sizes) <= split.workers and line_bits // split.workers >= 8
        # the smallest W: half of it would not hold the slots (or is no W)
        assert split.workers == 4 or split.copies * max(sizes) > split.workers // 2
        if len(sizes) == 1:
            assert split.operand is None and (split.workers - split.total) % 2 == 0
        else:
            bits, n, top = CONTRACT_OPERANDS[split.operand]
            assert len(sizes) <= n and split.copies * max(sizes) < 2 ** bits
            assert split.total == split.copies * world <= top
        assert [split.locate(r) for r in range(world)] == \
            [(c, i) for c, size in enumerate(sizes) for i in range(size)]


@pytest.mark.parametrize("line_bits, even, odd", [(64, 64, 31), (512, 120, 55), (1024, 120, 55)])
def test_the_largest_world_sizes_served(line_bits, even, odd):
    """Worked from the contract: 8 controllers at most (COUNTS4's 8
    contributors), each count at most 15 (4 bits) with a total of at most
    120: 8 x 15 = 120 ranks; an odd world size votes twice a rank, so at
    most 7 ranks a controller: 8 x 7 = 56, 55 odd.  At 64 bits W is at
    most 8 (a byte a segment): 8 x 8 = 64, and 8 x 4 = 32, 31 odd."""
    assert largest_world(line_bits) == (even, odd)
    served = [w for w in range(1, 200) if _default_serves(w, line_bits)]
    assert served == [w for w in range(1, even + 1) if w % 2 == 0 or w <= odd]
    with pytest.raises(ValueError, match=rf"every even world size up to {even} and every "
                                         rf"odd one up to {odd}"):
        plan_controllers(odd + 2, line_bits)


def _default_serves(world, line_bits):
    try:
        plan_controllers(world, line_bits)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("world, sizes", [(11, (6, 5)), (13, (7, 6)), (17, (6, 6, 5)),
                                          (22, (11, 11)), (9, (5, 4)), (32, (16, 16)),
                                          (55, (7,) * 7 + (6,)), (120, (15,) * 8)])
def test_worked_splits(world, sizes):
    """Hand-worked: 11 ranks vote twice each (22 slots > 16), so two
    controllers of 6 and 5 (12 and 10 slots, W 16, counts up to 12 in 4
    bits); 22 ranks are two of 11 (one slot each, W 16)."""
    assert plan_controllers(world).sizes == sizes


@pytest.mark.parametrize("world, asked, want", [(3, (2, 1), (4, 2)), (4, (3, 1), (4, 1)),
                                                (11, (8, 3), (16, 2)), (6, 3, (4, 1)),
                                                (8, 4, (4, 1)), (5, (3, 2), (8, 2))])
def test_a_split_asked_for(world, asked, want):
    """``ranks_per_controller`` an int (equal controllers) or a tuple (each
    controller's ranks): (W, copies) as the world size's parity and the
    largest controller need."""
    split = plan_controllers(world, ranks_per_controller=asked)
    assert (split.workers, split.copies) == want
    assert split.sizes == (asked if isinstance(asked, tuple) else (asked,) * (world // asked))


@pytest.mark.parametrize("world, asked, match", [
    (5, (3, 3), r"ranks_per_controller=\(3, 3\) holds 6 ranks"),
    (10, 4, r"ranks_per_controller=4: 10 ranks do not split"),
    (19, (9, 10), r"ranks_per_controller=\(9, 10\): a controller of 10 ranks needs 20"),
    (18, (2,) * 9, r"9 controllers .* fit no level-2 count line")])
def test_a_split_that_cannot_serve_is_refused(world, asked, match):
    with pytest.raises(ValueError, match=match):
        plan_controllers(world, ranks_per_controller=asked)
