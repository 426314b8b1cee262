"""``ksmon explain``: one group, explained for a person on call (report + rendering)."""
