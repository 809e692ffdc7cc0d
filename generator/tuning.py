"""The committed tuning databases (tuning/db/*.json, written by kgen-tune).

The generator reads them for two things: the winners they name join the
default level and make up the tuned level, and their text is compiled into
the registry so that the runtime can look them up without a file.  The
runtime checks each database (format, generator hash, variants compiled in)
before it trusts it; here a database that does not parse is skipped with a
warning, so that a broken file never breaks a build.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Set

ROOT = Path(__file__).resolve().parent.parent
DB_DIR = ROOT / "tuning" / "db"


def database_files() -> List[Path]:
    return sorted(DB_DIR.glob("*.json")) if DB_DIR.is_dir() else []


def load_databases(arches) -> List[Dict]:
    """The committed databases measured on GPUs of the build's arches (a
    name or a sequence of names), in file order."""
    arches = {arches} if isinstance(arches, str) else set(arches)
    out = []
    for path in database_files():
        try:
            db = json.loads(path.read_text())
            entries = db["entries"]
            if not isinstance(entries, list):
                raise ValueError("entries is not a list")
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"generator: warning: skipping tuning database {path.name}: {e}", file=sys.stderr)
            continue
        if db.get("arch") in arches:
            out.append(db)
    return out


def winners(databases: Sequence[Dict]) -> Set[str]:
    """Every variant name the databases pick."""
    return {e.get("variant", "") for db in databases for e in db["entries"] if isinstance(e, dict)}


def embedded_texts(databases: Sequence[Dict], compiled: Set[str]) -> List[str]:
    """The databases as the registry embeds them: each re-serialised with
    only the entries whose variant this build compiles (a -Dkernels filter
    may drop some winners; the rest of the database still applies)."""
    texts = []
    for db in databases:
        kept = dict(db)
        kept["entries"] = [e for e in db["entries"] if isinstance(e, dict) and e.get("variant") in compiled]
        texts.append(json.dumps(kept, indent=1, sort_keys=True))
    return texts
