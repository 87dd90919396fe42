"""The hierarchy extension (contract section 5): the count unit beside the
core, the exact count-line sums and the wrapper the full profile's top
uses (:class:`.unit.HierarchyUnit`)."""
