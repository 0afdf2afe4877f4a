"""smem html: read, make the page, write it to a file (atomically, as -o does) or to stdout."""

from ..errors import SmemError
from .data import page_documents
from .html import page_html, plotly_js

__all__ = ["run_html", "page_title"]


def page_title(documents_meta_source):
    """The window's title: the machine and the time of the reading."""
    source = documents_meta_source
    return f"smem: {source.get('hostname') or source.get('description', '?')} at {source.get('time', '?')}"


def run_html(request, path, write=None, force=False):
    """Write the page of ``request`` (a data.PageRequest) to ``path``, or give it to ``write``
    (bytes: the CLI's, which says a full disk or a closed stdout in one line) when ``path`` is "-";
    the warnings to show."""
    import json
    plotly = plotly_js()  # a missing extra fails before the source is read
    documents, meta, warnings = _documents(request)
    source = json.loads(documents["process"])["source"]
    page = page_html(documents, meta, page_title(source), plotly)
    if path == "-":
        write(page)
        return warnings
    from ..output import output_file
    try:
        with output_file(path, looks_like=_looks_like_page, force=force, what="smem html page", private=True) as out:
            out.write(page)
    except OSError as e:
        raise SmemError(f"cannot write {path}: {e.strerror or e}") from None
    return warnings


def _documents(request):
    """The page's documents; a recording's (not compared) with its timeline."""
    query = request.query
    if query.source and query.old_source is None and query.at is None:
        from ..sources.recorded import Recording, is_recording
        if is_recording(query.source):
            from .timeline import timeline_documents
            with Recording(query.source) as recording:
                entries = list(recording.frames)
            if len(entries) > 1:
                return timeline_documents(request, entries)
    return page_documents(request, pids_found=True)


def _looks_like_page(head, tail=b""):
    """An existing file -o may replace without --force: a page smem html wrote."""
    return head.startswith(b"<!DOCTYPE html>") and b'<meta name="generator" content="smem html">' in head
