"""The command line: ``python -m ctxlab inspect | replay | compare | doctor`` (``main.py`` parses, the rest act).

The top of the import graph: it may use every other part of ctxlab; nothing imports it.
"""
