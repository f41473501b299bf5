"""The HTML pages (``pos-etl report``, ``pos-etl docs``) rendered from the Jinja2
templates in ``pipeline/outputs/templates``, with autoescaping: a name from the POS or a
description that holds markup shows as text."""

from __future__ import annotations

import jinja2

from pipeline.core.money import format_money

PAGES = jinja2.Environment(
    loader=jinja2.PackageLoader("pipeline.outputs", "templates"), autoescape=True,
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
PAGES.filters["money"] = format_money


def render_page(template: str, **values) -> str:
    """The page ``template`` (a file of ``pipeline/outputs/templates``) filled with ``values``."""
    return PAGES.get_template(template).render(**values)
