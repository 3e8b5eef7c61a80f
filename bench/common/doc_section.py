"""A section of docs/performance.md that one benchmark's renderer owns: the text between its begin
and end marker lines. Shared by the renderers (bench/torch_backend/render_performance.py,
bench/allreduce/render_cross_host.py, bench/serve/render_performance.py), so that each says only
how its raw output becomes text."""


def section_text(text, begin, end):
    """The section's content in `text` (without its markers and leading blank lines), or None
    when either marker is missing."""
    if begin not in text or end not in text:
        return None
    return text.split(begin, 1)[1].split(end, 1)[0].lstrip("\n")


def write_section(doc_path, begin, end, section):
    """Replaces the section's content in the file `doc_path` with `section` (text ending in a
    newline), or appends the section with its markers when they are missing."""
    with open(doc_path) as doc:
        text = doc.read()
    if begin in text and end in text:
        before, rest = text.split(begin, 1)
        _, after = rest.split(end, 1)
        text = before + begin + "\n" + section + end + after
    else:
        text = text.rstrip() + "\n\n" + begin + "\n" + section + end + "\n"
    with open(doc_path, "w") as doc:
        doc.write(text)
