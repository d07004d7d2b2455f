"""`candor audit conflicts`: documents that disagree, and their SQL."""
