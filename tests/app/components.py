"""Reading Dash components and pages in the app tests: their text, a component's props, the first paint's settings."""

from __future__ import annotations

import html
import json
import re


def component_text(children) -> str:
    """The text of components in reading order."""
    if isinstance(children, str | int | float):
        return str(children)
    if isinstance(children, list | tuple):
        return "\n".join(component_text(c) for c in children if c is not None)
    return component_text(getattr(children, "children", None) or [])


def props_of(layout: dict, wanted: str) -> dict:
    """The props of the component whose id is ``wanted`` in a Dash layout as JSON (KeyError if none)."""
    stack = [layout]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            props = node.get("props")
            if isinstance(props, dict) and props.get("id") == wanted:
                return props
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    raise KeyError(wanted)


def map_settings(text: str) -> dict:
    """The first paint's map settings (its ``data-map`` attribute) in a page's HTML."""
    return json.loads(html.unescape(re.search(r'data-map="([^"]*)"', text).group(1)))


def carried_paint(text: str) -> dict:
    """The first paint's data a page's HTML carries (app/first_paint.py placeholder_html), its images' sources put
    back from the ``<img>`` elements that carry them (AssertionError if one is missing or before none of them)."""
    found = re.search(r'<script type="application/json" class="first-paint-data">(.*?)</script>', text, re.S)
    paint = json.loads(found.group(1))
    layers = {
        m.group(1): (m.start(), html.unescape(m.group(2)))
        for m in re.finditer(r'<img id="([^"]+)" class="first-paint-layer" src="([^"]*)"', text)
    }
    for image in [paint.get("image")] + [m["image"] for m in paint.get("maps") or []]:
        if image:
            at, source = layers[image["layer"]]
            assert at < found.start() and image["source"] is None  # parsed before the scripts; not carried twice
            image["source"] = source
            del image["layer"]
    return paint
