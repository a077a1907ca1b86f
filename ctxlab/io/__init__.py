"""The only parsers and writers: transcript readers (``formats/``), the session file (``session.py``,
the only session writer), the JSON codec (``codec.py``) and the page store.

The book (the modules at the top of ``ctxlab/``) holds no file I/O: these modules read files into the
book's types (:mod:`ctxlab.messages`) and write them back; the book never imports them.
"""
