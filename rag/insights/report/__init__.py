"""`candor report`: the measures of the gate log, and their SQL."""
