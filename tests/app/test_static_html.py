"""Dash html components as HTML markup (app/static_html.py)."""

import pytest
from dash import dcc, html

from orientscope.app.static_html import to_html


def test_components_become_markup_with_their_attributes_and_escaped_text():
    tree = html.Div(
        [
            html.H3(["Molecule ", html.Span("a<b & c", id="molecule-id", className="molecule-id")]),
            html.Table([html.Tr([html.Th("k"), html.Td("v", className=None)])], className="kv"),
            None,
            html.Details([html.Summary(3)], open=True),
            html.Br(),
        ],
        id="panel",
        style={"maxWidth": "9px"},
        title='say "hi"',
        hidden=False,
        **{"data-x": "1"},
    )
    assert to_html(tree) == (
        '<div id="panel" style="max-width:9px" title="say &quot;hi&quot;" data-x="1">'
        '<h3>Molecule <span id="molecule-id" class="molecule-id">a&lt;b &amp; c</span></h3>'
        '<table class="kv"><tr><th>k</th><td>v</td></tr></table>'
        "<details open><summary>3</summary></details><br></div>"
    )


def test_a_component_that_needs_react_is_refused():
    with pytest.raises(ValueError, match="Store"):
        to_html(html.Div(dcc.Store(id="s")))
