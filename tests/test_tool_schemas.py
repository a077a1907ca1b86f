"""Tool definitions with nested schemas (as MCP servers emit) count by the cookbook rule at every depth (issue 13).

The recipe: OpenAI cookbook, 'How to count tokens with tiktoken', section 7 (function definitions, gpt-4o), read
2026-11-30 — top-level properties only; ctxlab extends the same per-property rule to nested ``properties``,
``items`` and ``anyOf``/``oneOf``/``allOf``. Anthropic publishes no recipe.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.messages import ToolSpec
from ctxlab.tokens import TiktokenCounter, property_tokens, schema_tokens, tools_tokens

O200K = TiktokenCounter("o200k_base")

FIELD = {"type": "object", "description": "The filter to apply.", "properties": {
    "clauses": {"type": "array", "description": "Clauses joined by AND.", "items": {
        "type": "object", "properties": {
            "field": {"type": "string", "description": "Column name."},
            "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt", "contains"]},
            "value": {"anyOf": [{"type": "string"}, {"type": "number"}], "description": "Value to compare."}}}}}}


def mcp_tool(k: int, nested: bool) -> ToolSpec:
    """An MCP-like search tool; ``nested=False`` keeps the same top-level fields with their nested schema cut."""
    filt = copy.deepcopy(FIELD) if nested else {"type": "object", "description": "The filter to apply."}
    return ToolSpec(f"db_search_{k}", "Search the database.", {"type": "object", "properties": {
        "query": {"type": "string", "description": "Full-text query."}, "filter": filt}})


def flattened_tool(k: int) -> ToolSpec:
    """The same leaves written as top-level properties (what a flat tool with these fields looks like)."""
    return ToolSpec(f"db_search_{k}", "Search the database.", {"type": "object", "properties": {
        "query": {"type": "string", "description": "Full-text query."},
        "field": {"type": "string", "description": "Column name."},
        "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt", "contains"]},
        "value": {"type": "string", "description": "Value to compare."}}})


def test_thirty_nested_tools_count_more_than_thirty_flat_ones():
    """Before issue 13 30 nested tools counted 1,122 tokens, fewer than the 2,022 of the same leaves flattened (the
    nested schema was ignored); the cut-down tools (same top-level fields, nothing nested) counted the same 1,122."""
    nested = tools_tokens([mcp_tool(k, True) for k in range(30)], O200K)
    cut = tools_tokens([mcp_tool(k, False) for k in range(30)], O200K)
    flattened = tools_tokens([flattened_tool(k) for k in range(30)], O200K)
    one = schema_tokens(FIELD, O200K)
    assert nested == cut + 30 * one and one > 40
    assert nested > flattened > cut


def test_a_flat_tool_counts_exactly_as_the_cookbook_says():
    """Cookbook: "func_init = 7 ... prop_init = 3, prop_key = 3, enum_init = -3, enum_item = 3, func_end = 12"."""
    spec = ToolSpec("get_weather", "Get the weather.", {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city."}, "unit": {"type": "string", "enum": ["c", "f"]}}})
    c = O200K.count
    assert tools_tokens([spec], O200K) == (12 + 7 + c("get_weather:Get the weather") + 3 + 3 + c("city:string:The city")
                                           + 3 - 3 + 3 + c("c") + 3 + c("f") + c("unit:string:"))


def test_nested_parts_by_the_same_rule():
    c = O200K.count
    arr = {"type": "array", "items": {"type": "string", "description": "A tag."}}
    assert property_tokens("tags", arr, O200K) == 3 + c("tags:array:") + 3 + c(":string:A tag")
    obj = {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert property_tokens("p", obj, O200K) == 3 + c("p:object:") + 3 + 3 + c("x:integer:")
    assert property_tokens("e", {"type": "string", "enum": []}, O200K) == 3 + c("e:string:")  # empty enum: no -3
    assert schema_tokens({}, O200K) == 0 and schema_tokens({"properties": "junk", "items": 3}, O200K) == 0


leaf = st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean"])},
                             optional={"description": st.text(max_size=20),
                                       "enum": st.lists(st.text(max_size=6), max_size=3)})
schemas = st.recursive(leaf, lambda inner: st.one_of(
    st.fixed_dictionaries({"type": st.just("object"),
                           "properties": st.dictionaries(st.text("abcxyz_", min_size=1, max_size=6), inner,
                                                         max_size=3)}),
    st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
    st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=2)})), max_leaves=8)


def objects_in(schema: dict) -> list[dict]:
    """Every object node of a schema tree (where a property can be added)."""
    found = [schema] if schema.get("type") == "object" else []
    for sub in [*(schema.get("properties") or {}).values(), *([schema["items"]] if "items" in schema else []),
                *schema.get("anyOf", [])]:
        found += objects_in(sub)
    return found


@settings(max_examples=60, deadline=None)
@given(schemas, leaf, st.text("klmn", min_size=1, max_size=4))
def test_adding_a_nested_property_never_lowers_the_count(schema, extra, key):
    """Property: wherever an object sits in the tree, adding one more property raises the count by at least 3."""
    root = {"type": "object", "properties": {"root": schema}}
    before = tools_tokens([ToolSpec("t", "A tool.", root)], O200K)
    for k in range(len(objects_in(root))):
        grown = copy.deepcopy(root)
        target = objects_in(grown)[k]
        props = target.setdefault("properties", {})
        if key in props:
            continue
        props[key] = extra
        assert tools_tokens([ToolSpec("t", "A tool.", grown)], O200K) >= before + 3
