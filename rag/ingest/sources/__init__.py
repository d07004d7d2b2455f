"""Connectors: documents from where an organisation keeps them (websites first), synced into a
knowledge base through the same ingest pipeline as files (`base.Connector`, `sync.Syncer`)."""
