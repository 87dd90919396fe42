"""The reports' figure helpers: pyplot on the Agg backend, and save writes
the figure and closes it."""

from neuron_fabric.experiments.plotting import pyplot, save


def test_save_writes_the_figure_and_closes_it(tmp_path):
    plt = pyplot()
    assert plt.get_backend().lower() == "agg"
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    save(fig, tmp_path / "line.png", dpi=50)
    assert (tmp_path / "line.png").read_bytes().startswith(b"\x89PNG")
    assert fig.number not in plt.get_fignums()
