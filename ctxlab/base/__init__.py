"""What every layer of ctxlab may use: the error types, argument checks, escaping of text shown
from a file, secret redaction and tolerant JSON parsing. Imports nothing else from ctxlab.
"""
