"""smem html: one self-contained page of where the memory went (and smem serve's page at /).

:mod:`.data` reads the source once (twice to compare) and renders the ``-F json`` documents of
the views the page shows; :mod:`.mappings` adds each process's largest mappings and who maps
each shared one; :mod:`.html` puts them, plotly.js and the page's own script and style (files
beside this one) into one HTML document that makes no request of any kind.  This package sits
at the top of the data flow: it reads the app and the views, and nothing below imports it.
"""
