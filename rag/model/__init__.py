"""Plain data and the Protocols every part of Candor is written against."""
