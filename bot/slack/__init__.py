"""The Slack adapter: Slack events become `Question`s, `Answer`s become Block Kit (docs/slack.md)."""
