"""`candor audit answers`: sampled re-verification, human labels, and their SQL."""
