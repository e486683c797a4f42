#!/usr/bin/env python3
"""Writes the SQLite database Datasette serves in tests/it/any_api.rs.

usage: make_kb.py CORPUS.json OUT.db

The table `docs(id, title, body, url, updated)` holds the corpus (its `id`
an INTEGER PRIMARY KEY, so Datasette answers it as a JSON number), and
`docs_fts` is an FTS5 index over title and body set up by hand the way
Datasette's documentation says ("Configuring FTS by hand"): an external
content table (`content="docs"`), which Datasette detects, so that
`GET /kb/docs.json?_search=WORDS` searches it. Standard library only.
"""

import json
import sqlite3
import sys


def main():
    corpus, out = sys.argv[1], sys.argv[2]
    with open(corpus, encoding="utf-8") as f:
        docs = json.load(f)
    db = sqlite3.connect(out)
    db.executescript(
        """
        CREATE TABLE docs (
            id INTEGER PRIMARY KEY,
            title TEXT,
            body TEXT NOT NULL,
            url TEXT,
            updated TEXT
        );
        CREATE VIRTUAL TABLE docs_fts USING fts5 (
            title, body, content="docs", content_rowid="id"
        );
        """
    )
    db.executemany(
        "INSERT INTO docs (id, title, body, url, updated) VALUES (?, ?, ?, ?, ?)",
        [(d["id"], d.get("title"), d["body"], d.get("url"), d.get("updated")) for d in docs],
    )
    db.execute("INSERT INTO docs_fts (rowid, title, body) SELECT id, title, body FROM docs")
    db.commit()
    db.close()


if __name__ == "__main__":
    main()
