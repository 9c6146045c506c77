"""Trust, fourth pass (issue 29): nothing is lost or overwritten, deleted is gone from
every file, a damaged file stops nothing, and batching never shows."""

from __future__ import annotations

import pytest

from memora.core.errors import StoreError
from memora.core.records import fresh_id


# -- ids never collide, and nothing is overwritten ------------------------------------------
def test_ids_have_enough_randomness_for_millions():
    ids = {fresh_id() for _ in range(20_000)}
    assert len(ids) == 20_000
    assert all(len(i) >= 12 and int(i, 16) >= 0 for i in ids)  # 48 bits or more


@pytest.mark.parametrize(
    "items",
    [
        [{"id": "taken0000001", "content": "The learner sings in a choir"}],  # an id already stored
        [{"content": "The learner plays chess"}, {"id": "taken0000001", "content": "The learner paints"}],
        [{"id": "twin00000001", "content": "The learner rows"}, {"id": "twin00000001", "content": "The learner runs"}],
    ],
)
def test_a_write_that_would_replace_another_memory_is_refused(make_app, items):
    app = make_app()
    app.store.add_many([{"id": "taken0000001", "content": "The learner keeps bees on the roof"}])
    before = [(r.id, r.content) for r in app.store.all_records()]
    with pytest.raises(StoreError, match="already in use"):
        app.store.add_many(items)
    assert [(r.id, r.content) for r in app.store.all_records()] == before
