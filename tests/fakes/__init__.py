"""Fakes at the seams, over real HTTP on 127.0.0.1 (STYLE.md 6): the real SDK clients talk to them.

- `openai_server.FakeOpenAI`: an OpenAI-compatible `/v1/embeddings` endpoint with scriptable
  failures; `ThreadedFakeOpenAI` runs one in a background thread for subprocess tests.
- `slack_api.FakeSlack`: Slack's Web API (the methods Candor calls, recorded, with scriptable 429s,
  errors and delays; channel membership and `response_url` limits enforced) and a Socket Mode
  WebSocket endpoint; `ThreadedFakeSlack` for subprocess tests.
- `slack_events`: what Slack sends (Events API envelopes, interactivity, slash commands), signed.
"""
