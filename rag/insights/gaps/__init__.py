"""`candor gaps`: unanswered questions clustered and re-checked, and their SQL."""
