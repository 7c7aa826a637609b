"""Copies of the log that Chronicle wrote to this machine's disk (exports, archives), and what
a removal from the log removes from them too (docs/erasure.md, "Exports on disk").

``ledger`` records what was written where; ``forms`` says how a value looks in a file;
``replacing`` writes a file whole or not at all; ``archive_dir`` makes an archive directory
anew (manifest and signature too) as an edit says, and ``recorded_archive`` puts it in place
with the database's record of it.

- A secret found (``chronicle redact --value-file``): ``export_file`` redacts it in an
  export's lines keeping the chain, ``tables`` in the cells of a view's CSV or Parquet and in
  a JSON document; ``search`` goes through them all and reports where it was.
- One part redacted (``chronicle redact SESSION --seq N``, a person's erasure):
  ``redacted_parts`` says which part and which strings, ``part_lines`` puts the database's
  marker in an export's lines, ``view_rows`` scrubs a view's rows of those sessions;
  ``redacted_copies`` goes through them all.
- Sessions erased: ``session_lines`` takes their blocks out of an export's lines (and their
  anchors), ``view_rows`` drops their rows; ``erased_copies`` goes through them all.
  ``disk_changes`` is what both report, and how they walk the copies.
"""
