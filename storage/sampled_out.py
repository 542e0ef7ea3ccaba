"""Tasks whose seeded sampling is spent (table sampled_out, migration 020).

Sampling is seeded: asked again, with the same seed, for no more candidates than a finished
sampling could find, a task's space draws the same samples and finds nothing new. Collect
(tasks.collect.sample_task) notes such a task and skips it the next time. A lent GPU machine
had spent ~100 s of a 7-minute lease re-drawing the tasks a presampled store had exhausted.
"""

from __future__ import annotations

from storage.store import Store


def sampled_out(store: Store, task_id: int, hardware_id: int, seed: int, space: str) -> int:
    """The most candidates a finished sampling of this task, profile, seed and space (default |
    simt) was asked for and could not find; 0 where none is on record."""
    return int(store.scalar("SELECT coalesce(max(asked), 0) FROM sampled_out WHERE task_id = ? "
                            "AND hardware_id = ? AND seed = ? AND space = ?",
                            [task_id, hardware_id, seed, space]))


def note_sampled_out(store: Store, task_id: int, hardware_id: int, seed: int, space: str,
                     asked: int, found: int) -> None:
    """Record that a sampling asked for `asked` distinct candidates and the task had `found`
    after it (call inside the transaction that stores what it found)."""
    store.con.execute(
        "INSERT INTO sampled_out (task_id, hardware_id, seed, space, asked, found) VALUES "
        "(?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET asked = greatest(asked, excluded.asked), "
        "found = greatest(found, excluded.found), created_at = now()",
        [task_id, hardware_id, seed, space, asked, found])
