"""`candor eval`: golden files and their scoring."""
