"""Fakes at the seams, over real HTTP on 127.0.0.1 (STYLE.md 6): the real SDK clients talk to them.

- `openai_server.FakeOpenAI`: an OpenAI-compatible `/v1/embeddings` endpoint with scriptable
  failures; `ThreadedFakeOpenAI` runs one in a background thread for subprocess tests.
"""
