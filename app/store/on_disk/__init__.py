"""Copies of the log that Chronicle wrote to this machine's disk (exports, archives), and a
secret found and removed in them (``chronicle redact --value-file``; docs/erasure.md).

``ledger`` records what was written where; ``forms`` says how a value looks in a file;
``export_file`` redacts it in an export's lines keeping the chain; ``tables`` in the cells of
a view's CSV or Parquet and in a JSON document; ``archive_dir`` in an archive directory,
manifest and signature made anew; ``replacing`` writes a file whole or not at all;
``search`` goes through them all and reports where the value was.
"""
