"""Dash ``html`` components as HTML markup, for what the page shows before Dash has loaded.

The first paint (``app/first_paint.py``) puts parts of the layout into the page HTML itself. Rendering
the very components the callbacks return, instead of writing the markup a second time, keeps the
static page and the page Dash then renders alike, node for node.
"""

from __future__ import annotations

import html
import re

from dash.development.base_component import Component

HTML_NAMESPACE = "dash_html_components"
VOID_TAGS = frozenset({"br", "hr", "img", "input", "wbr"})
# Dash props whose HTML attribute is spelt differently; other props keep their names (title, role, data-*, ...).
ATTRIBUTE_OF = {"className": "class", "htmlFor": "for"}
CAMEL = re.compile(r"(?<!^)[A-Z]")
SKIPPED_PROPS = frozenset({"children", "n_clicks", "n_clicks_timestamp", "disable_n_clicks", "key", "loading_state"})


def _css(style: dict) -> str:
    """A React style object as CSS text (``{"maxWidth": "9px"}`` -> ``max-width:9px``)."""
    return ";".join(f"{CAMEL.sub(lambda m: '-' + m.group(0), k).lower()}:{v}" for k, v in style.items())


def to_html(node) -> str:
    """Markup of a component tree of ``dash.html`` components, strings, numbers, lists and None.

    ValueError for any other component (a ``dcc`` one needs its React code to render).
    """
    if node is None or node is False:
        return ""
    if isinstance(node, list | tuple):
        return "".join(to_html(n) for n in node)
    if isinstance(node, str | int | float):
        return html.escape(str(node), quote=False)
    if not isinstance(node, Component) or node._namespace != HTML_NAMESPACE:
        raise ValueError(f"only dash.html components render without Dash, not {type(node).__name__}")
    tag = node._type.lower()
    attrs = []
    for prop, value in node.to_plotly_json()["props"].items():
        if prop in SKIPPED_PROPS or value is None or value is False:
            continue
        name = ATTRIBUTE_OF.get(prop, prop)
        if value is True:
            attrs.append(f" {name}")
            continue
        text = _css(value) if prop == "style" and isinstance(value, dict) else str(value)
        attrs.append(f' {name}="{html.escape(text, quote=True)}"')
    opening = f"<{tag}{''.join(attrs)}>"
    if tag in VOID_TAGS:
        return opening
    return f"{opening}{to_html(getattr(node, 'children', None))}</{tag}>"
