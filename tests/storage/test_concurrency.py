"""Two writers and a reader on one store at once (DuckDB allows one writing process per file):
writers wait for each other instead of failing, no write is lost, and a reader never sees half
of a transaction."""

import subprocess
import sys

from storage.store import Store
from tests.conftest import ROOT

WRITER = """
import sys
from storage.store import Store
db, name, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
for b in range(batches):
    with Store(db, lock_wait_s=60) as store, store.transaction():
        for k in range(2):  # two rows per transaction: a reader must see both or neither
            store.upsert_trial({"study_name": name, "trial_number": 2 * b + k,
                                "state": "COMPLETE", "params_json": "{}"})
"""

READER = """
import sys
from storage.store import Store
db, reads = sys.argv[1], int(sys.argv[2])
odd = 0
for _ in range(reads):
    with Store(db, read_only=True, lock_wait_s=60) as store:
        counts = store.query("SELECT count(*) FROM search_trials GROUP BY study_name")
    odd += sum(n % 2 for (n,) in counts)
print(odd)
"""


def _spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_two_writers_and_a_reader(db):
    Store(db).close()  # schema in place before the race
    writers = [_spawn(WRITER, db, name, "25") for name in ("a", "b")]
    reader = _spawn(READER, db, "40")
    for proc in [*writers, reader]:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
    assert int(out.strip()) == 0  # never half a transaction
    with Store(db, read_only=True) as store:
        counts = dict(store.query("SELECT study_name, count(*) FROM search_trials GROUP BY 1"))
    assert counts == {"a": 50, "b": 50}  # nothing lost
