"""``ksmon demo``: everything on one machine, with a real problem for ksmon to find."""
