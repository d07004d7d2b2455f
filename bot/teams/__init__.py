"""The Microsoft Teams adapter: Bot Framework activities become `Question`s, `Answer`s become Teams
messages with citations."""
