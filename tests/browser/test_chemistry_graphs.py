"""The verdict panel says, in real headless Chromium, how many molecules have no chemical graph and why."""

from __future__ import annotations

import pytest

from orientscope.app.verdict import CHEMISTRY_GRAPHS
from orientscope.core.dataset import from_molecules
from orientscope.pipeline.precompute import make_params, precompute
from orientscope.science.perception import NO_GRAPH_REASONS
from orientscope.store.shards import save_sharded
from tests.browser.chrome import serve
from tests.browser.pages import open_page, text_of
from tests.molecules import ACETATE, COSTLY_SMILES, ORGANICS, embedded

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def mixed_url(tmp_path_factory):
    """12 organics, a coenzyme A thioester whose search runs out of budget, an acetate without its charge."""
    data_dir = tmp_path_factory.mktemp("mixed")
    organics = [embedded(s, seed=k) for k, s in enumerate(ORGANICS)]
    ids = [f"m{k}" for k in range(len(organics))] + ["coa", "acetate"]
    mols = from_molecules([*organics, embedded(COSTLY_SMILES), ACETATE], ids=ids,
                          charges=[0] * len(organics) + [0, None])  # fmt: skip
    save_sharded(data_dir, "mixed", mols, name="Mixed", source="constructed")
    precompute(data_dir, "mixed", make_params(), cluster="in-process")
    with serve(data_dir) as url:
        yield url


def test_the_panel_counts_the_molecules_without_a_graph_by_reason(driver, mixed_url):
    open_page(driver, f"{mixed_url}/?dataset=mixed")
    text = text_of(driver, CHEMISTRY_GRAPHS)
    assert text.startswith(f"Chemical graphs: {len(ORGANICS)} of {len(ORGANICS) + 2} molecules")
    assert f"no graph, budget (1): {NO_GRAPH_REASONS['budget']}; e.g. coa" in text
    assert f"no graph, charge_unknown (1): {NO_GRAPH_REASONS['charge_unknown']}; e.g. acetate" in text
    assert "1 molecule perceived from 3D without a charge in the file: charge 0 assumed" in text
