"""Dated data with sources: model profiles, prices, cache rules, the offline tokenizer encodings.

Each row names where its value comes from (a provider page and the date it was read, a measurement,
or an assumption). Imports nothing from ctxlab but :mod:`ctxlab.base`.
"""
