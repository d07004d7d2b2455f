"""`candor feedback export`: votes with their answers."""
