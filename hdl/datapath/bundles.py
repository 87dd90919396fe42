"""The bundles the datapath's steps pass between pipeline registers, and
the types that say how each field of a bundle is registered
(:class:`~.pipeline.Pipeline`):

* an Amaranth value: a per-line signal, registered once;
* :class:`Copies`: a per-line control with one copy per group;
* :class:`Groups`: one vector per group (lane data, per-lane bits), each
  under its group's enable; a :class:`Gated` vector takes its forced bits
  by the flip-flops' synchronous set/reset;
* None: a field the profile does not have.

:class:`Geometry` says how a line is cut into lanes and groups, and
:class:`StepSet` is the base of a profile's steps.
"""

import dataclasses
from dataclasses import dataclass

from amaranth import Mux

__all__ = ["Copies", "Gated", "Geometry", "Groups", "StepSet", "fields"]


class Copies(tuple):
    """A per-line control, one copy per group (``copies[g]`` serves group g)."""

    #: All copies of one value reach their groups through a spread tree.
    tree = True

    @classmethod
    def spread(cls, value, groups):
        """``value`` (a register output, so each copy's register is fed by a
        plain wire) to every group, through a spread tree."""
        return cls([value] * groups)

    @classmethod
    def each(cls, value, groups):
        """``value`` (computed, not a register output) to every group, each
        copy registered at the next boundary (no tree): for a control read
        right after it."""
        return _EachCopies([value] * groups)


class _EachCopies(Copies):
    tree = False


class Groups(tuple):
    """One vector per group (``groups[g]`` holds group g's lanes)."""

    #: The form (:data:`~.pipeline.COPY_FORMS`) its registers take.
    form = 0

    @classmethod
    def apart(cls, vectors):
        """Vectors whose registers must not merge with the equal flip-flops
        of another arrangement of the same bits: they take another form."""
        groups = cls(vectors)
        groups.form = 1
        return groups


@dataclass(frozen=True)
class Gated:
    """A vector whose bits read constants under conditions.

    Bit ``b`` is ``const >> b & 1`` when ``cond[b]`` is high, else
    ``value[b]``; ``cond[b]`` is None for a bit without a condition.  A
    register of it resets the bit synchronously under ``cond[b]`` and its
    clock enable (the reset has priority, as ECP5 flip-flops implement it).
    """
    value: object
    cond: tuple
    const: int

    def __post_init__(self):
        if len(self.cond) != len(self.value):
            raise ValueError(f"{len(self.cond)} conditions for {len(self.value)} bits")

    def __len__(self):
        return len(self.value)


@dataclass(frozen=True)
class Geometry:
    """How a line is cut: W-bit lanes, groups of ``group_bits`` line bits."""
    line_bits: int
    workers: int
    group_bits: int

    @property
    def groups(self):
        return self.line_bits // self.group_bits

    @property
    def group_lanes(self):
        return self.group_bits // self.workers

    @property
    def count_bits(self):
        """Width of a sign count 0..W."""
        return self.workers.bit_length()

    @property
    def half_bit(self):
        """h with W/2 = 1 << h."""
        return (self.workers // 2).bit_length() - 1

    @staticmethod
    def field(vector, index, width):
        """Field ``index`` of a vector of ``width``-bit fields."""
        return vector[index * width:(index + 1) * width]


class StepSet:
    """Base of a profile's step set: four steps over lanes of ``geometry``
    (:attr:`steps`, bundle to bundle); ``wire`` puts a value through a
    signal of its own (:meth:`Pipeline.wire`)."""

    def __init__(self, geometry, wire):
        self._geo = geometry
        self._wire = wire

    @property
    def steps(self):
        raise NotImplementedError

    def _lanes(self, vector, width):
        """The group's lanes of a vector of ``width``-bit fields, one per lane."""
        return [self._geo.field(vector, i, width) for i in range(self._geo.group_lanes)]

    def _counted(self, line, count):
        """``count(data)`` for each group's data, or for its view (the lanes
        as they are to be counted) where the line has one and the group's
        ``use_view`` copy is set: both are formed and one is chosen after,
        so the choice is the last gate."""
        if line.view is None:
            return Groups(count(data) for data in line.data)
        return Groups(Mux(use, count(view), count(data))
                      for data, view, use in zip(line.data, line.view, line.use_view))


def fields(bundle):
    """(name, value) of the fields ``bundle`` has (those not None)."""
    return [(f.name, getattr(bundle, f.name)) for f in dataclasses.fields(bundle)
            if getattr(bundle, f.name) is not None]
