"""CAPS2 (contract section 4.4, version 2.2): the build's profile and one
bit per optional feature, in the order of ``contract/facts.py`` FEATURES,
checked against the values the contract works out by hand."""

import pytest

from neuron_fabric.contract import regmap
from neuron_fabric.contract.facts import PROFILES, ParameterError, TopParams, profile_named
from neuron_fabric.contract.regmap import RegisterMap


def test_caps2_reads_the_profile_and_its_features():
    full = RegisterMap(TopParams(profile="full"))["CAPS2"]
    paper = RegisterMap(TopParams(profile="paper"))["CAPS2"]
    assert (full.offset, full.access, full.kind) == (0x018, "RO", "const")
    # contract 4.4: bit 0 format_margin .. bit 4 hierarchy, all in full;
    # profile in [31:24], 0 full, 1 paper
    assert full.value & 0xFF00001F == 0x0000001F
    assert paper.value == 0x01000000
    assert full.field("hierarchy").lsb == 4 and full.field("profile").lsb == 24
    assert regmap.VERSION_MAJOR << 16 | regmap.VERSION_MINOR == 0x00020002


def test_a_feature_added_later_takes_the_next_bit(monkeypatch):
    before = {f.name: f.lsb for f in regmap.caps2_fields()}
    features = dict(regmap.FEATURES, later_feature="a feature added after the others")
    monkeypatch.setattr(regmap, "FEATURES", features)
    after = {f.name: f.lsb for f in regmap.caps2_fields()}
    assert after == dict(before, later_feature=len(features) - 1)
    # no profile has it: its bit reads 0
    caps2 = RegisterMap(TopParams(profile="full"))["CAPS2"]
    assert caps2.field("later_feature").get(caps2.value) == 0


def test_caps2_refuses_more_features_than_it_has_bits(monkeypatch):
    monkeypatch.setattr(regmap, "FEATURES", {f"f{k}": "" for k in range(25)})
    with pytest.raises(ValueError, match="24 feature bits, not 25"):
        regmap.caps2_fields()


def test_a_derived_profile_reads_as_its_base_with_its_feature_bits():
    # contract 4.4: packed_view is bit 5; a build of full less the hierarchy
    # (bit 4) or with the packed view reads profile 0, full
    assert regmap.caps2_value("full-no-hierarchy") == 0x0000001F & ~(1 << 4)
    assert regmap.caps2_value("full-with-packed_view") == 0x0000001F | 1 << 5
    assert regmap.caps2_value("paper-with-hierarchy") == 0x01000000 | 1 << 4
    assert profile_named("full-with-packed_view").features == \
        PROFILES["full"].features | {"packed_view"}
    for bad in ("full-with-", "full-with-nothing", "fast-with-hierarchy", "full-plus-hierarchy"):
        with pytest.raises(ParameterError, match="<profile>-with-<feature>"):
            profile_named(bad)
