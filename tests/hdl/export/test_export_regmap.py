"""``neuron-fabric-export --regmap``: the register map's C header and JSON
beside the Verilog, for the parameters of the export; the lint waivers
(``neuron_fabric.vlt``) come with every export."""

from neuron_fabric.contract import regmap_files
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.contract.paths import VERILOG_CACHE
from neuron_fabric.hdl.export import integration, verilog


def test_regmap_option_writes_header_and_json(tmp_path, capsys):
    argv = ["--no-top", "--line-bits", "64", "--workers", "4", "--stages", "1",
            "--regions", "5", "--max-outstanding", "12", "--profile", "paper",
            "--out-dir", str(tmp_path), "--cache", str(VERILOG_CACHE), "--regmap"]
    assert verilog.main(argv) == 0
    params = TopParams(line_bits=64, workers=4, stages=1, regions=5, max_outstanding=12,
                       profile="paper")
    assert (tmp_path / regmap_files.HEADER_NAME).read_text() == regmap_files.c_header(params)
    read, _ = regmap_files.from_json((tmp_path / regmap_files.JSON_NAME).read_text())
    assert read == params
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [regmap_files.HEADER_NAME, regmap_files.JSON_NAME, "neuron_fabric_datapath.v",
         integration.WAIVER_NAME])


def test_without_the_option_no_register_files(tmp_path, capsys):
    argv = ["--no-top", "--line-bits", "64", "--workers", "4", "--stages", "1",
            "--out-dir", str(tmp_path), "--cache", str(VERILOG_CACHE)]
    assert verilog.main(argv) == 0
    # (the waivers always; the parameter header with the top only)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["neuron_fabric_datapath.v",
                                                                 integration.WAIVER_NAME])
